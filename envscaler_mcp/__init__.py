"""envscaler-mcp: stateful tool environments as standalone MCP servers, and an evaluator for LLM agents."""

__version__ = "0.1.0"

__all__ = ["__version__"]
