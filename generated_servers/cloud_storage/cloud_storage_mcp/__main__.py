"""Run the cloud_storage MCP server: `python -m cloud_storage_mcp [--http] [--scenario ID] [--state FILE]`."""

from cloud_storage_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
