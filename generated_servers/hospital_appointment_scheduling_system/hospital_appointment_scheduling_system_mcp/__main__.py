"""Run the hospital_appointment_scheduling_system MCP server: `python -m hospital_appointment_scheduling_system_mcp [--http] [--scenario ID] [--state FILE]`."""

from hospital_appointment_scheduling_system_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
