"""Run the it_helpdesk MCP server: `python -m it_helpdesk_mcp [--http] [--scenario ID] [--state FILE]`."""

from it_helpdesk_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
