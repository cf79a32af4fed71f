"""Runtime of a generated envscaler-mcp server (the same files in every generated server)."""
