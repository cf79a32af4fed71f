"""The embedded local model (`local/qwen2.5-coder-1.5b`, `local/qwen2.5-coder-0.5b`).

Small coder models rarely emit native tool calls, so each turn with tools is a grammar-constrained
decision: the server must answer JSON `{"tool_calls": [{"name": <one of the tools>, "arguments": {...}}],
"reply": "..."}`. A non-empty `tool_calls` becomes real calls (the `reply` written beside them is
discarded: the model invents results there); an empty one makes `reply` the answer. If the JSON cannot
be read (e.g. cut by max_tokens), the tolerant text parser is the fallback.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from envscaler_mcp.providers._adapter import check_allow_requests
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolCallRequest, ToolDef
from envscaler_mcp.providers.local.server import LocalServer
from envscaler_mcp.providers.local.weights import LocalModel, ensure_weights
from envscaler_mcp.providers.openai_chat import OpenAIChatProvider, json_schema_format
from envscaler_mcp.providers.textcalls import parse_text_tool_calls
from envscaler_mcp.providers.tools import ToolNames, to_openai_messages

DECISION_RULES = """\
Answer with one JSON object: {"tool_calls": [{"name": ..., "arguments": {...}}], "reply": "..."}.
Rules:
1. You know nothing about the user's data (records, ids, statuses, amounts) except what function results \
tell you. To answer a question about it or to change it, call the matching function(s): put the call(s) in \
"tool_calls" and leave "reply" empty.
2. Function results come back inside <tool_response> tags. Read them. Never call a function again with the same \
arguments once you have its response.
3. When the results show the task is done, or they answer the user's question, set "tool_calls" to [] and write \
in "reply" a short final answer to the user, based only on the results.
4. If a result starts with ERROR, fix the arguments or explain the problem in "reply".
5. Only for greetings and thanks, set "tool_calls" to [] and answer in "reply"."""


def decision_schema(tools: list[ToolDef]) -> dict[str, Any]:
    """JSON Schema of one decision; each call's arguments follow its own tool's input schema."""
    variants = [
        {"type": "object",
         "properties": {"name": {"const": t.name}, "arguments": t.input_schema or {"type": "object"}},
         "required": ["name", "arguments"]}
        for t in tools
    ]
    return {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"anyOf": variants}}, "reply": {"type": "string"}},
        "required": ["tool_calls", "reply"],
    }


def decision_system_prompt(system: str, tools: list[ToolDef]) -> str:
    """The caller's system prompt, then the function list and the decision rules."""
    lines = [system.strip() or "You are a helpful agent that completes the user's task with functions.", "",
             "You can call these functions:"]
    for t in tools:
        lines.append(f"- {t.name}: {t.description.strip()}")
        lines.append(f"  parameters: {json.dumps(t.input_schema, ensure_ascii=False, separators=(',', ':'))}")
    return "\n".join([*lines, "", DECISION_RULES])


def _decision_text(message: Message) -> str:
    calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    return json.dumps({"tool_calls": calls, "reply": "" if calls else message.content}, ensure_ascii=False)


class LocalProvider(OpenAIChatProvider):
    """Talks to the shared local llama.cpp server, starting it on the first call."""

    def __init__(self, spec: str, weights: LocalModel, server: LocalServer, *, client: Any = None,
                 **options: Any) -> None:
        options.setdefault("max_concurrency", 1)
        super().__init__(spec, client, model=spec.split("/", 1)[-1], text_tool_calls=True, official=False,
                         network=False, **options)
        self.weights = weights
        self.server = server
        self._calls = 0

    async def _client(self) -> Any:
        if self.client is None:
            check_allow_requests(self.spec)
            await anyio.to_thread.run_sync(ensure_weights, self.weights)
            base_url = await anyio.to_thread.run_sync(self.server.ensure_started)
            import openai

            self.client = openai.AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0)
        return self.client

    def decision_body(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> dict[str, Any]:
        """Chat-completions body for a constrained decision turn."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        converted: list[Message] = [Message(role="system", content=decision_system_prompt(system, tools))]
        for m in messages:
            if m.role == "system":
                continue
            converted.append(Message(role="assistant", content=_decision_text(m)) if m.role == "assistant" else m)
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(converted, ToolNames()),
                                "response_format": json_schema_format(decision_schema(tools))}
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body["max_tokens"] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        return body

    def read_decision(self, content: str, tools: list[ToolDef]) -> tuple[list[ToolCallRequest], str]:
        """Calls and reply of a decision; the tolerant text parser when the JSON is unreadable."""
        declared = {t.name for t in tools}
        try:
            decision = json.loads(content)
        except json.JSONDecodeError:
            return parse_text_tool_calls(content, declared)
        if not isinstance(decision, dict):
            return [], content
        calls = []
        for item in decision.get("tool_calls") or []:
            if isinstance(item, dict) and item.get("name") in declared and isinstance(item.get("arguments", {}), dict):
                self._calls += 1
                calls.append(ToolCallRequest(id=f"call_{self._calls}", name=item["name"],
                                             arguments=item.get("arguments") or {}))
        reply = decision.get("reply")
        return calls, ("" if calls else (reply if isinstance(reply, str) else ""))

    async def _send(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        client = await self._client()
        if not tools or settings.json_schema is not None:
            return await super()._send(messages, tools, settings)
        body = self.decision_body(messages, tools, settings)
        response = await client.chat.completions.create(**body, timeout=settings.timeout_s)
        turn = self.turn_from_response(response, [], ToolNames())
        calls, reply = self.read_decision(turn.message.content, tools)
        message = Message(role="assistant", content=reply, tool_calls=calls)
        finish = "tool_calls" if calls else turn.finish_reason
        return turn.model_copy(update={"message": message, "finish_reason": finish})
