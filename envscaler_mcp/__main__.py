from envscaler_mcp.cli import main

main()
