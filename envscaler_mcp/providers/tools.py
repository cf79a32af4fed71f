"""The one place where tool listings and messages change format.

MCP `Tool` listings become `ToolDef`s; `ToolDef`s become OpenAI chat tools or Anthropic tools under
provider-safe names (`^[a-zA-Z0-9_-]{1,64}$`), and `ToolNames` maps those names back. Our `Message`
list converts to OpenAI chat messages and to Anthropic content blocks, and provider answers convert
back into a `Message`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from mcp.types import CallToolResult, Tool

from envscaler_mcp._outcome import read_result
from envscaler_mcp.providers.base import Message, ToolCallRequest, ToolDef

SAFE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNSAFE_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
ERROR_PREFIX = "ERROR: "


def mcp_tools_to_defs(tools: Iterable[Tool]) -> list[ToolDef]:
    """Turn an MCP tools/list answer into the provider-neutral tool definitions (MCP names kept)."""
    defs = []
    for tool in tools:
        schema = dict(tool.input_schema or {})
        schema.setdefault("type", "object")
        if schema.get("type") == "object":
            schema.setdefault("properties", {})
        defs.append(ToolDef(name=tool.name, description=tool.description or "", input_schema=schema))
    return defs


def _base_safe_name(name: str) -> str:
    cleaned = _UNSAFE_CHARS.sub("_", name) or "tool"
    if len(cleaned) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        cleaned = f"{cleaned[:55]}_{digest}"
    return cleaned


class ToolNames:
    """A two-way map between MCP tool names and provider-safe names, unique within one tool list."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.to_provider: dict[str, str] = {}
        self.to_mcp: dict[str, str] = {}
        for name in names:
            self.add(name)

    @classmethod
    def from_defs(cls, defs: Sequence[ToolDef] | None) -> ToolNames:
        """The map for a list of tool definitions."""
        return cls(d.name for d in defs or [])

    def add(self, name: str) -> str:
        """Register an MCP name and return its provider-safe name."""
        if name in self.to_provider:
            return self.to_provider[name]
        candidate = _base_safe_name(name)
        n = 2
        while candidate in self.to_mcp:
            suffix = f"_{n}"
            candidate = _base_safe_name(name)[: 64 - len(suffix)] + suffix
            n += 1
        self.to_provider[name] = candidate
        self.to_mcp[candidate] = name
        return candidate

    def provider(self, name: str) -> str:
        """Provider-safe name of an MCP name (names not in the list are made safe the same way)."""
        return self.to_provider.get(name) or self.add(name)

    def mcp(self, provider_name: str) -> str:
        """MCP name of a provider-safe name; an unknown name (the model invented it) is returned unchanged."""
        return self.to_mcp.get(provider_name, provider_name)


def openai_tools(defs: Sequence[ToolDef], names: ToolNames) -> list[dict[str, Any]]:
    """OpenAI chat-completions `tools` for these definitions."""
    return [
        {"type": "function",
         "function": {"name": names.provider(d.name), "description": d.description, "parameters": d.input_schema}}
        for d in defs
    ]


def anthropic_tools(defs: Sequence[ToolDef], names: ToolNames) -> list[dict[str, Any]]:
    """Anthropic messages-API `tools` for these definitions."""
    return [{"name": names.provider(d.name), "description": d.description, "input_schema": d.input_schema}
            for d in defs]


def tool_result_message(call: ToolCallRequest, result: CallToolResult) -> Message:
    """The `role: tool` message answering `call` with an MCP result (is_error carried over)."""
    read = read_result(result)
    return Message(role="tool", content=read.text, tool_call_id=call.id, name=call.name, is_error=read.is_error)


def decode_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Decode a tool call's argument text: (arguments, None) when it is a JSON object, else ({}, raw text)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):  # nested past the interpreter's recursion limit: not sent
        return {}, raw
    return (value, None) if isinstance(value, dict) else ({}, raw)


def _arguments_text(call: ToolCallRequest) -> str:
    if call.raw_arguments is not None and not call.arguments:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


# ---- OpenAI chat completions -------------------------------------------------------------------------


def to_openai_messages(messages: Sequence[Message], names: ToolNames) -> list[dict[str, Any]]:
    """Our messages as OpenAI chat messages; a tool error's text gets the "ERROR: " prefix."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            text = (ERROR_PREFIX + m.content) if m.is_error else m.content
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": text})
        elif m.role == "assistant" and m.tool_calls:
            out.append({
                "role": "assistant",
                "content": m.content or None,
                "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": names.provider(c.name), "arguments": _arguments_text(c)}}
                    for c in m.tool_calls
                ],
            })
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _extra(obj: Any, key: str) -> Any:
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(key)
    return value


def from_openai_message(message: Any, names: ToolNames) -> Message:
    """An OpenAI `ChatCompletionMessage` as our assistant message (names mapped back, arguments decoded)."""
    calls = []
    for i, tc in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(tc, "function", None)
        if function is None:  # a custom (non-function) tool call: not something we offered
            continue
        arguments, raw = decode_arguments(function.arguments)
        calls.append(ToolCallRequest(id=tc.id or f"call_{i}", name=names.mcp(function.name),
                                     arguments=arguments, raw_arguments=raw))
    reasoning = _extra(message, "reasoning_content") or _extra(message, "reasoning")
    return Message(role="assistant", content=message.content or "", tool_calls=calls,
                   reasoning=reasoning if isinstance(reasoning, str) and reasoning else None)


# ---- Anthropic messages ------------------------------------------------------------------------------


def _anthropic_blocks(m: Message, names: ToolNames) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content,
                 "is_error": m.is_error}]
    blocks: list[dict[str, Any]] = []
    if m.role == "assistant" and m.reasoning and m.reasoning_signature:
        blocks.append({"type": "thinking", "thinking": m.reasoning, "signature": m.reasoning_signature})
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    if m.role == "assistant":
        blocks.extend({"type": "tool_use", "id": c.id, "name": names.provider(c.name), "input": c.arguments}
                      for c in m.tool_calls)
    return blocks


def to_anthropic_messages(messages: Sequence[Message], names: ToolNames) -> tuple[str | None, list[dict[str, Any]]]:
    """Our messages as (system prompt, Anthropic messages).

    System messages are joined into the separate system prompt. Tool results become `tool_result`
    blocks in a user turn; consecutive turns of the same role (several tool results, or results then
    a user text) are merged into one turn, as the API wants strictly alternating roles.
    """
    system = [m.content for m in messages if m.role == "system" and m.content]
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        role = "assistant" if m.role == "assistant" else "user"
        blocks = _anthropic_blocks(m, names) or [{"type": "text", "text": "(empty)"}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    # tool results must come first in a user turn
    for turn in out:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: 0 if b["type"] == "tool_result" else 1)
    return ("\n\n".join(system) or None), out


def from_anthropic_content(blocks: Sequence[Any], names: ToolNames) -> Message:
    """Anthropic response content blocks as our assistant message (text, tool_use, thinking kept)."""
    texts: list[str] = []
    calls: list[ToolCallRequest] = []
    reasoning: list[str] = []
    signature = None
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            arguments, raw = decode_arguments(block.input if isinstance(block.input, dict) else json.dumps(block.input))
            calls.append(ToolCallRequest(id=block.id, name=names.mcp(block.name), arguments=arguments,
                                         raw_arguments=raw))
        elif kind == "thinking":
            reasoning.append(block.thinking)
            signature = getattr(block, "signature", None) or signature
    return Message(role="assistant", content="".join(texts), tool_calls=calls,
                   reasoning="\n".join(reasoning) or None, reasoning_signature=signature)
