"""The LLM provider layer: one interface (`base.Provider`), chosen by a `provider/model` string."""

from envscaler_mcp.providers.base import (
           AssistantTurn,
           GenerationSettings,
           Message,
           Provider,
           ToolCallRequest,
           ToolDef,
)
from envscaler_mcp.providers.registry import get_provider
from envscaler_mcp.providers.tools import mcp_tools_to_defs

__all__ = ["AssistantTurn", "GenerationSettings", "Message", "Provider", "ToolCallRequest", "ToolDef",
           "get_provider", "mcp_tools_to_defs"]
