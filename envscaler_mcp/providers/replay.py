"""Answers from a folder of recorded model answers (the response-cache format), never from a model.

A request whose key is not in the folder is an error naming the step's prompt: the recording no longer
matches the code (a prompt or a setting changed), so the test replaying it must be re-recorded. With
`record_to`, every answer served is also written there with its full request and a label, which turns a
run's response cache into self-describing fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envscaler_mcp._usage import Usage
from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.cache import ResponseCache, request_body, request_key


class NotRecorded(ProviderError):
    """The replay folder has no answer for this request."""


class ReplayProvider:
    """Serves recorded answers for `spec` from `directory`; counts what it served."""

    def __init__(self, spec: str, directory: str | Path, *, record_to: str | Path | None = None,
                 label: str | None = None) -> None:
        self.spec = spec
        self.source = ResponseCache(directory)
        self.target = ResponseCache(record_to) if record_to is not None else None
        self.label = label
        self.served: list[str] = []
        self.recorded_usage = Usage()

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
                       settings: GenerationSettings | None = None) -> AssistantTurn:
        """The recorded answer to exactly this request (with its usage as recorded)."""
        settings = settings or GenerationSettings()
        tool_list = list(tools or [])
        key = request_key(self.spec, messages, tool_list, settings)
        entry = self.source.entry(key)
        if entry is None:
            first = next((m.content for m in messages if m.role == "system"), messages[0].content if messages else "")
            raise NotRecorded(f"{self.spec}: no recorded answer for request {key[:12]} "
                              f"(prompt starts {first[:80]!r}); the recording does not match this code")
        if key in self.served:  # the recorded run got this one from its response cache: no call, no usage
            entry.raise_fault()
            return entry.turn.model_copy(update={"cached": True, "usage": Usage(cost_usd=0.0)})
        self.served.append(key)
        self.recorded_usage = self.recorded_usage + entry.turn.usage
        if self.target is not None:
            self.target.put(key, self.spec, entry.turn, entry.request or request_body(self.spec, messages, tool_list,
                                                                                     settings),
                            label=entry.label or self.label,  # an answer keeps the date it was recorded on
                            fault=entry.fault)
        entry.raise_fault()  # a recorded ModelFault (context overflow, refusal) happens again
        return entry.turn.model_copy(update={"cached": True})

    async def aclose(self) -> None:
        """Nothing to release."""
