"""A scripted provider for tests: it answers with the turns it was given, in order, and records every request."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envscaler_mcp._json import JSONObject
from envscaler_mcp._usage import Usage
from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import (
    AssistantTurn,
    GenerationSettings,
    Message,
    Provider,
    ToolCallRequest,
    ToolDef,
)
from envscaler_mcp.providers.registry import register_provider

ScriptItem = str | Message | AssistantTurn | Callable[[list[Message], list[ToolDef]], str | Message]


def tool_call(name: str, arguments: JSONObject | None = None, call_id: str | None = None) -> ToolCallRequest:
    """Shorthand for a scripted tool call."""
    return ToolCallRequest(id=call_id or f"call_{name}", name=name, arguments=arguments or {})


class MockProvider:
    """Replays a script of turns. A string is a text answer; a Message or AssistantTurn is returned as is;
    a callable gets (messages, tools) and returns either. Running past the end of the script is an error."""

    def __init__(self, script: Sequence[ScriptItem] = (), *, spec: str = "mock", repeat_last: bool = False,
                 context_tokens: int | None = None) -> None:
        self.spec = spec
        self.context_tokens = context_tokens  # a context window to fit prompts into (None: not said)
        self._script = list(script)
        self._repeat_last = repeat_last
        self.requests: list[tuple[list[Message], list[ToolDef], GenerationSettings]] = []

    async def complete(
        self, messages: list[Message], tools: list[ToolDef] | None = None, settings: GenerationSettings | None = None
    ) -> AssistantTurn:
        """Return the next scripted turn."""
        tools = list(tools or [])
        self.requests.append((list(messages), tools, settings or GenerationSettings()))
        index = len(self.requests) - 1
        if index >= len(self._script):
            if not (self._repeat_last and self._script):
                raise ProviderError(f"mock provider: script has {len(self._script)} turns, call {index + 1} asked for more")
            index = len(self._script) - 1
        item = self._script[index]
        if callable(item) and not isinstance(item, (Message, AssistantTurn)):
            item = item(list(messages), tools)
        if isinstance(item, AssistantTurn):
            return item
        message = item if isinstance(item, Message) else Message(role="assistant", content=str(item))
        usage = Usage(input_tokens=sum(len(m.content) for m in messages) // 4, output_tokens=len(message.content) // 4,
                      cost_usd=0.0, calls=1)
        return AssistantTurn(message=message, usage=usage, finish_reason="tool_calls" if message.tool_calls else "stop",
                             model=self.spec)

    async def aclose(self) -> None:
        """Nothing to release."""


class MockOptions(BaseModel):
    """Options of the scripted provider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    script: list[Any] = Field(default_factory=list, description="The turns to answer with, in order.")
    repeat_last: bool = Field(False, description="Repeat the last turn instead of failing past the end.")


@register_provider("mock", options=MockOptions, needs_model=False)
def mock_provider(spec: str, model: str, options: MockOptions) -> Provider:
    """`mock`: answers with the scripted turns (tests)."""
    return MockProvider(options.script, spec=spec, repeat_last=options.repeat_last)
