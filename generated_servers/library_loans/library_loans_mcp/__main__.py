"""Run the library_loans MCP server: `python -m library_loans_mcp [--http] [--scenario ID] [--state FILE]`."""

from library_loans_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
