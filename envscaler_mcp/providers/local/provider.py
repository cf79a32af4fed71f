"""The embedded local model (`local/qwen2.5-coder-1.5b`, `local/qwen2.5-coder-0.5b`).

Small coder models rarely emit native tool calls, so each turn with tools is a grammar-constrained
decision: the server must answer JSON `{"plan": "...", "tool_calls": [{"name": <one of the tools>,
"arguments": {...}}], "reply": "..."}`. The short plan written first makes the model look data up instead
of inventing it (kept as the message's `plan`: a decision label, not reasoning). A non-empty `tool_calls` becomes real calls (the `reply` written beside them is
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
from envscaler_mcp.providers.local.kvcache import CacheEntry
from envscaler_mcp.providers.local.prompt import (
    NATIVE_NUDGE,
    ToolStyle,
    answer_constraint,
    decision_schema,
    decision_system_prompt,
    decision_text,
)
from envscaler_mcp.providers.local.server import LocalServer, pick_runtime, shared_server
from envscaler_mcp.providers.local.stream import stream_chat
from envscaler_mcp.providers.local.weights import (
    DEFAULT_LOCAL_MODEL,
    LocalModel,
    assembled_path,
    ensure_weights,
    get_local_model,
)
from envscaler_mcp.providers.openai_chat import OpenAIChatProvider
from envscaler_mcp.providers.registry import register_provider
from envscaler_mcp.providers.textcalls import parse_text_tool_calls
from envscaler_mcp.providers.tools import ToolNames, to_openai_messages

# A decision is a plan, a few calls or a short answer; longer output is a runaway (the text parser still reads
# the calls of a cut decision).
MAX_DECISION_TOKENS = 600
COLD_PROMPT_GUESS = 2500  # tokens of a whole prompt before one has been measured
SAFETY = 3.0


# After function results the small model tends to repeat the calls it has just made; a line after the results
# (seen by the model only, not part of the episode's transcript) turns most of those turns into an answer.
CONTINUE_NOTE = ("(note from the system: those are the results of your calls. If they complete the request or "
                 "answer the question, answer the user now; call a function only for what is still missing.)")
REPEAT_NOTE = ("(note from the system: the function call(s) you chose were already made with these arguments, "
               "and their results are above. Do not call them again: read the results and write your final "
               "answer in \"reply\".)")


def repeats_answered_calls(messages: Sequence[Message], calls: list[ToolCallRequest]) -> bool:
    """True when every call repeats, with the same arguments, a call of this conversation that got a
    result which is not an error."""
    made = {c.id: (c.name, json.dumps(c.arguments, sort_keys=True)) for m in messages if m.role == "assistant"
            for c in m.tool_calls}
    answered = {made[m.tool_call_id] for m in messages
                if m.role == "tool" and not m.is_error and m.tool_call_id in made}
    return all((c.name, json.dumps(c.arguments, sort_keys=True)) in answered for c in calls)


class LocalProvider(OpenAIChatProvider):
    """Talks to the shared local llama.cpp server, starting it on the first call."""

    def __init__(self, spec: str, weights: LocalModel, server: LocalServer, *, client: Any = None,
                 mode: Literal["decision", "native"] = "decision", tool_style: ToolStyle = "compact",
                 **options: Any) -> None:
        options.setdefault("max_concurrency", 1)
        super().__init__(spec, client, model=spec.split("/", 1)[-1], text_tool_calls=True, official=False,
                         network=False, **options)
        self.weights = weights
        self.server = server
        self.mode = mode
        self.tool_style: ToolStyle = tool_style
        self._calls = 0
        self._prompt_tokens = 0  # size of the last whole prompt: what a cold turn would have to read

    @property
    def context_tokens(self) -> int:
        """The context window of the server's slot: prompt and answer together must fit in it."""
        return self.server.ctx

    def turn_budget_s(self, settings: GenerationSettings | None = None) -> float:
        """Seconds one more turn may take at the speed this server has measured (before any measurement, a
        slow machine's): reading the last prompt in full (as if its cache were lost) and writing the longest
        decision, times `SAFETY`, plus a minute. The episode limit and the per-request timeout derive from it."""
        settings = settings or GenerationSettings()
        prompt = max(self._prompt_tokens, COLD_PROMPT_GUESS)
        longest = min(settings.max_tokens or MAX_DECISION_TOKENS, MAX_DECISION_TOKENS)
        return 60.0 + SAFETY * self.server.activity.seconds_for(prompt, longest)

    def answer_budget_s(self, settings: GenerationSettings) -> float:
        """Seconds a free-form answer (no tools: a synthesis step) may take: reading the prompt and writing up to
        its `max_tokens` at the measured speed, times `SAFETY`, plus a minute. A timeout shorter than the
        generation cancels the work and repeats it on every retry without ever finishing."""
        prompt = max(self._prompt_tokens, COLD_PROMPT_GUESS)
        return 60.0 + SAFETY * self.server.activity.seconds_for(prompt, settings.max_tokens or MAX_DECISION_TOKENS)

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
                       settings: GenerationSettings | None = None) -> AssistantTurn:
        """One call; the per-request timeout is raised to this machine's `turn_budget_s`: a CPU model reads a
        cold prompt for minutes on a busy machine, and a shorter timeout only cancels and repeats the work."""
        settings = settings or GenerationSettings()
        budget = self.turn_budget_s(settings) if tools else self.answer_budget_s(settings)
        if settings.timeout_s < budget:
            settings = settings.model_copy(update={"timeout_s": budget})
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
        converted: list[Message] = [Message(role="system", content=decision_system_prompt(system, tools, self.tool_style))]
        for m in messages:
            if m.role == "system":
                continue
            converted.append(Message(role="assistant", content=decision_text(m)) if m.role == "assistant" else m)
        if messages and messages[-1].role == "tool":
            converted.append(Message(role="user", content=CONTINUE_NOTE))
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(converted, ToolNames()),
                                **answer_constraint(decision_schema(tools), llguidance=self.server.llguidance)}
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        body["max_tokens"] = min(settings.max_tokens or MAX_DECISION_TOKENS, MAX_DECISION_TOKENS)
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
        if settings.json_schema is not None and not tools:
            return await self._send_structured(client, messages, settings)
        if not tools:
            self.server.current_prefix = None
            return await super()._send(messages, tools, settings)
        if self.mode == "native":
            self.server.current_prefix = None
            return await super()._send(self.native_messages(messages), tools, settings)
        body = self.decision_body(messages, tools, settings)
        entry = self.server.cache_entry(self.weights.sha256, body["messages"][0]["content"])
        saved = await self._restore(entry)
        answer = await stream_chat(client, body, self.server.activity, settings.timeout_s)
        self._prompt_tokens = answer.prompt_tokens
        if entry is not None:
            self.server.current_prefix = entry.key
            if not saved:
                await self._save(entry, answer.prompt_tokens + answer.completion_tokens)
        calls, reply, plan = self.read_decision(answer.content, tools)
        if calls and repeats_answered_calls(messages, calls):
            # The small model tends to call again what it has just done instead of answering: ask once more,
            # with the calls' results in view and a grammar that allows an answer only.
            retry = self.decision_body([*messages, Message(role="user", content=REPEAT_NOTE)], tools, settings)
            retry.pop("grammar", None)
            retry.update(answer_constraint(decision_schema(tools, answer_only=True), llguidance=self.server.llguidance))
            second = await stream_chat(client, retry, self.server.activity, settings.timeout_s)
            answer.prompt_tokens += second.prompt_tokens
            answer.completion_tokens += second.completion_tokens
            answer.cached_tokens += second.cached_tokens
            answer.finish_reason = second.finish_reason
            calls, reply, plan = self.read_decision(second.content, tools)
        message = Message(role="assistant", content=reply, tool_calls=calls, plan=plan)
        finish = "tool_calls" if calls else answer.finish_reason
        usage = self.prices.usage(self.spec, answer.prompt_tokens, answer.completion_tokens, answer.cached_tokens)
        return AssistantTurn(message=message, usage=usage, finish_reason=finish, model=self.spec)

    def structured_body(self, messages: list[Message], settings: GenerationSettings) -> dict[str, Any]:
        """Chat-completions body of an answer constrained to `settings.json_schema`: llguidance's compact
        one-line JSON where the runtime has it (no tokens spent on indentation), else `response_format`."""
        assert settings.json_schema is not None
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages, ToolNames()),
                                **answer_constraint(settings.json_schema, llguidance=self.server.llguidance)}
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body["max_tokens"] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        return body

    async def _send_structured(self, client: Any, messages: list[Message], settings: GenerationSettings) -> AssistantTurn:
        self.server.current_prefix = None
        answer = await stream_chat(client, self.structured_body(messages, settings), self.server.activity,
                                   settings.timeout_s)
        self._prompt_tokens = answer.prompt_tokens
        usage = self.prices.usage(self.spec, answer.prompt_tokens, answer.completion_tokens, answer.cached_tokens)
        return AssistantTurn(message=Message(role="assistant", content=answer.content), usage=usage,
                             finish_reason=answer.finish_reason, model=self.spec)

    async def _restore(self, entry: CacheEntry | None) -> bool:
        """Load the saved KV cache of this system prompt unless the slot holds it; True when a valid file
        exists (nothing to save afterwards)."""
        if entry is None:
            return False
        if not await anyio.to_thread.run_sync(entry.valid):
            return False
        if self.server.current_prefix == entry.key:
            return True
        self.server.activity.set("restoring")
        try:
            answer = await anyio.to_thread.run_sync(self.server.slot_action, "restore", entry.bin_path.name)
        finally:
            self.server.activity.set("idle")
        if answer is None:  # refused (another build's file under a colliding key, or the slot was busy)
            return False
        self.server.current_prefix = entry.key
        return True

    async def _save(self, entry: CacheEntry, tokens: int) -> None:
        """Save the slot (which now starts with this system prompt) under the prompt's key."""
        answer = await anyio.to_thread.run_sync(self.server.slot_action, "save", entry.temp_name())
        if answer is not None:
            await anyio.to_thread.run_sync(entry.commit, tokens)
        else:
            await anyio.to_thread.run_sync(entry.discard)


class LocalOptions(NetworkOptions):
    """Options of the embedded local model."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    client: Any = Field(None, description="An OpenAI SDK client for the local server (tests inject fakes).")
    runtime: str | None = Field(None, description="auto, llama-server or xllamacpp (default: "
                                "ENVSCALER_MCP_LOCAL_RUNTIME, else auto).")
    threads: int | None = Field(None, ge=1, description="CPU threads (default: ENVSCALER_MCP_LOCAL_THREADS, else "
                                "one per core).")
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
    threads = options.threads or int(env.get("ENVSCALER_MCP_LOCAL_THREADS") or 0)  # 0: one per core
    weights = get_local_model(model or DEFAULT_LOCAL_MODEL)
    if runtime not in ("auto", "llama-server", "xllamacpp"):
        raise UsageError(f"unknown local runtime '{runtime}'; use auto, llama-server or xllamacpp")
    server = shared_server(assembled_path(weights), pick_runtime(runtime), threads=threads, ctx=options.ctx)  # type: ignore[arg-type]
    return LocalProvider(f"local/{weights.name}", weights, server, client=options.client, mode=options.mode,
                         **options.adapter_options())
