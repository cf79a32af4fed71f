"""`envscaler-mcp view`: a local web viewer over run folders (read only; follows runs still being written)."""
