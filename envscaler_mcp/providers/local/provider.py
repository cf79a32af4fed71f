"""The embedded local model (`local/qwen2.5-coder-1.5b`, `local/qwen2.5-coder-0.5b`).

Small coder models rarely emit native tool calls, so each turn with tools is a grammar-constrained
decision: the server must answer JSON `{"plan": "...", "tool_calls": [{"name": <one of the tools>,
"arguments": {...}}], "reply": "..."}`. The short plan written first makes the model look data up instead
of inventing it (kept as the message's reasoning). A non-empty `tool_calls` becomes real calls (the `reply` written beside them is
discarded: the model invents results there); an empty one makes `reply` the answer. If the JSON cannot
be read (e.g. cut by max_tokens), the tolerant text parser is the fallback.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio
from pydantic import ConfigDict, Field

from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers._adapter import NetworkOptions, check_allow_requests
from envscaler_mcp.providers.base import (
    AssistantTurn,
    GenerationSettings,
    Message,
    Provider,
    ToolCallRequest,
    ToolDef,
)
from envscaler_mcp.providers.local.server import LocalServer, pick_runtime, shared_server
from envscaler_mcp.providers.local.weights import (
    DEFAULT_LOCAL_MODEL,
    LocalModel,
    assembled_path,
    ensure_weights,
    get_local_model,
)
from envscaler_mcp.providers.openai_chat import OpenAIChatProvider, json_schema_format
from envscaler_mcp.providers.registry import register_provider
from envscaler_mcp.providers.textcalls import parse_text_tool_calls
from envscaler_mcp.providers.tools import ToolNames, to_openai_messages

DECISION_RULES = """\
Answer with one JSON object: {"plan": "...", "tool_calls": [{"name": ..., "arguments": {...}}], "reply": "..."}.
"plan" is one short sentence: which function gives the data the user asks about or makes the change, or \
"answer" when the results you have already suffice.
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


NATIVE_NUDGE = (
    "Call a function whenever one fits: the user's data is known only through function results. "
    "Once a <tool_response> gives you the information you need, do not call the function again: "
    "reply to the user in one or two plain sentences."
)


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
        "properties": {"plan": {"type": "string", "maxLength": 160},
                       "tool_calls": {"type": "array", "items": {"anyOf": variants}},
                       "reply": {"type": "string"}},
        "required": ["plan", "tool_calls", "reply"],
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
    plan = message.reasoning or ("call the functions" if calls else "answer")
    return json.dumps({"plan": plan, "tool_calls": calls, "reply": "" if calls else message.content},
                      ensure_ascii=False)


class LocalProvider(OpenAIChatProvider):
    """Talks to the shared local llama.cpp server, starting it on the first call."""

    def __init__(self, spec: str, weights: LocalModel, server: LocalServer, *, client: Any = None,
                 mode: Literal["decision", "native"] = "decision", min_timeout_s: float = 900.0,
                 **options: Any) -> None:
        options.setdefault("max_concurrency", 1)
        super().__init__(spec, client, model=spec.split("/", 1)[-1], text_tool_calls=True, official=False,
                         network=False, **options)
        self.weights = weights
        self.server = server
        self.mode = mode
        # A CPU model needs minutes for a cold 3,000-token prompt on a busy machine; a shorter timeout only
        # cancels and repeats the work.
        self.min_timeout_s = min_timeout_s
        self._calls = 0

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
                       settings: GenerationSettings | None = None) -> AssistantTurn:
        """One call; the per-request timeout is raised to at least `min_timeout_s`."""
        settings = settings or GenerationSettings()
        if settings.timeout_s < self.min_timeout_s:
            settings = settings.model_copy(update={"timeout_s": self.min_timeout_s})
        return await super().complete(messages, tools, settings)

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

    def native_messages(self, messages: list[Message]) -> list[Message]:
        """Messages for a free-form turn with the tools in the chat template: the answer-after-results nudge added."""
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        nudge = (f"{system}\n\n" if system else "") + NATIVE_NUDGE
        return [Message(role="system", content=nudge), *(m for m in messages if m.role != "system")]

    def read_decision(self, content: str, tools: list[ToolDef]) -> tuple[list[ToolCallRequest], str, str | None]:
        """Calls, reply and plan of a decision; the tolerant text parser when the JSON is unreadable."""
        declared = {t.name for t in tools}
        try:
            decision = json.loads(content)
        except json.JSONDecodeError:  # e.g. cut by max_tokens: recover the calls, drop the torn JSON around them
            calls, rest = parse_text_tool_calls(content, declared)
            return calls, ("" if calls else rest), None
        if not isinstance(decision, dict):
            return [], content, None
        calls = []
        for item in decision.get("tool_calls") or []:
            if isinstance(item, dict) and item.get("name") in declared and isinstance(item.get("arguments", {}), dict):
                self._calls += 1
                calls.append(ToolCallRequest(id=f"call_{self._calls}", name=item["name"],
                                             arguments=item.get("arguments") or {}))
        reply, plan = decision.get("reply"), decision.get("plan")
        return (calls, "" if calls else (reply if isinstance(reply, str) else ""),
                plan if isinstance(plan, str) and plan else None)

    async def _send(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        client = await self._client()
        if not tools or settings.json_schema is not None:
            return await super()._send(messages, tools, settings)
        if self.mode == "native":
            return await super()._send(self.native_messages(messages), tools, settings)
        body = self.decision_body(messages, tools, settings)
        response = await client.chat.completions.create(**body, timeout=settings.timeout_s)
        turn = self.turn_from_response(response, [], ToolNames())
        calls, reply, plan = self.read_decision(turn.message.content, tools)
        message = Message(role="assistant", content=reply, tool_calls=calls, reasoning=plan)
        finish = "tool_calls" if calls else turn.finish_reason
        return turn.model_copy(update={"message": message, "finish_reason": finish})


class LocalOptions(NetworkOptions):
    """Options of the embedded local model."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    client: Any = Field(None, description="An OpenAI SDK client for the local server (tests inject fakes).")
    runtime: str | None = Field(None, description="auto, llama-server or xllamacpp (default: "
                                "ENVSCALER_MCP_LOCAL_RUNTIME, else auto).")
    threads: int | None = Field(None, ge=1, description="CPU threads (default: ENVSCALER_MCP_LOCAL_THREADS, else 2).")
    ctx: int = Field(8192, ge=512, description="Context window in tokens.")
    mode: Literal["decision", "native"] = Field("decision", description="Grammar-constrained decisions or "
                                                "native tool calls.")
    env: Mapping[str, str] | None = Field(None, description="Where to read variables (default: os.environ).")


@register_provider("local", options=LocalOptions, needs_model=False, usage="local/<model>",
                   example=f"local/{DEFAULT_LOCAL_MODEL}")
def local_provider(spec: str, model: str, options: LocalOptions) -> Provider:
    """`local/<model>` (or `local`): the embedded model, served by a shared llama.cpp server."""
    env = os.environ if options.env is None else options.env
    runtime = options.runtime or env.get("ENVSCALER_MCP_LOCAL_RUNTIME") or "auto"
    threads = options.threads or int(env.get("ENVSCALER_MCP_LOCAL_THREADS") or 2)
    weights = get_local_model(model or DEFAULT_LOCAL_MODEL)
    if runtime not in ("auto", "llama-server", "xllamacpp"):
        raise UsageError(f"unknown local runtime '{runtime}'; use auto, llama-server or xllamacpp")
    server = shared_server(assembled_path(weights), pick_runtime(runtime), threads=threads, ctx=options.ctx)  # type: ignore[arg-type]
    return LocalProvider(f"local/{weights.name}", weights, server, client=options.client, mode=options.mode,
                         **options.adapter_options())
