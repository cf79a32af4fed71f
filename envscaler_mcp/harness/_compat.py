"""Pieces the harness takes from other stages, with minimal stand-ins while those stages are not merged yet.

Each stand-in follows the documented interface (docs/architecture.md) and is removed once the real one exists.
"""

from __future__ import annotations

import json

from mcp.types import CallToolResult, TextContent, Tool

from envscaler_mcp.providers.base import ToolDef


def tools_to_defs(tools: list[Tool]) -> list[ToolDef]:
    """MCP tool listing -> provider ToolDefs (providers.tools.mcp_tools_to_defs when available)."""
    try:
        from envscaler_mcp.providers.tools import mcp_tools_to_defs
    except ImportError:
        return [ToolDef(name=t.name, description=t.description or "", input_schema=dict(t.input_schema)) for t in tools]
    return list(mcp_tools_to_defs(tools))


def result_text(result: CallToolResult) -> str:
    """The text a model sees for a tool result: the text blocks, else the structured content as JSON."""
    parts = [block.text for block in result.content if isinstance(block, TextContent)]
    if parts:
        return "\n".join(parts)
    return json.dumps(result.structured_content, ensure_ascii=False)
