"""Run the clinic_appointments MCP server: `python -m clinic_appointments_mcp [--http] [--scenario ID] [--state FILE]`."""

from clinic_appointments_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
