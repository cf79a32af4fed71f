"""Render stage: an EnvSkeleton (+ scenarios) becomes a standalone MCP server folder."""

from envscaler_mcp.render.cache import ensure_rendered
from envscaler_mcp.render.engine import build_files, is_current, read_manifest, render_server

__all__ = ["build_files", "ensure_rendered", "is_current", "read_manifest", "render_server"]
