"""Run the flight_bookings MCP server: `python -m flight_bookings_mcp [--http] [--scenario ID] [--state FILE]`."""

from flight_bookings_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
