"""Run the ecommerce_orders MCP server: `python -m ecommerce_orders_mcp [--http] [--scenario ID] [--state FILE]`."""

from ecommerce_orders_mcp.runtime.cli import main

if __name__ == "__main__":
    main()
