"""Opt-in on-disk cache of model answers, keyed by the SHA-256 of the full request.

The key covers the provider spec, every message, every tool definition and the settings that shape the
answer (the per-request timeout is left out). Entries are written atomically, one JSON file each, so a
rerun of a stage replays earlier answers at no cost and tests can replay recorded answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._io import atomic_write_text
from envscaler_mcp._usage import Usage
from envscaler_mcp.errors import ModelFault
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef


class CacheEntry(BaseModel):
    """One cached answer (file `<dir>/<key[:2]>/<key>.json`)."""

    key: str = Field(description="SHA-256 of the canonical request.")
    spec: str = Field(description="Provider spec that produced the answer.")
    turn: AssistantTurn = Field(description="The answer as first received, with its original usage.")
    request: dict[str, Any] | None = Field(
        None, description="The request the key was made from: messages, tools, settings (absent in older entries).")
    label: str | None = Field(None, description="Where the answer came from, for recorded fixtures "
                              "(e.g. 'recorded from local/qwen2.5-coder-1.5b on 2026-11-25').")
    fault: dict[str, str] | None = Field(
        None, description="The model's own failure instead of an answer ({kind, message} of a ModelFault: a context "
        "overflow, a refusal), served again as that failure; `turn` is then empty.")

    def raise_fault(self) -> None:
        """Raise the recorded ModelFault, if this entry is one."""
        if self.fault is not None:
            raise ModelFault(self.fault.get("message", "the model failed"),
                             self.fault.get("kind", "invalid_request"))  # type: ignore[arg-type]


# Message fields added after answers were first recorded: left out of the request while unset, so a key (and
# every recorded fixture) stays what it was for requests that do not use them.
_LATER_MESSAGE_FIELDS = ("full_chars", "plan")
_LATER_CALL_FIELDS = ("rejected",)


def message_body(message: Message) -> dict[str, Any]:
    """A message as a request body holds it (newer fields left out while unset)."""
    body = message.model_dump(mode="json")
    for name in _LATER_MESSAGE_FIELDS:
        if body.get(name) is None:
            body.pop(name, None)
    for call in body.get("tool_calls") or []:
        for name in _LATER_CALL_FIELDS:
            if call.get(name) is None:
                call.pop(name, None)
    return body


def request_body(spec: str, messages: Sequence[Message], tools: Sequence[ToolDef],
                 settings: GenerationSettings) -> dict[str, Any]:
    """The parts of a request that shape the answer (the per-request timeout is left out)."""
    return {
        "spec": spec,
        "messages": [message_body(m) for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "settings": settings.model_dump(mode="json", exclude={"timeout_s"}),
    }


def request_key(spec: str, messages: Sequence[Message], tools: Sequence[ToolDef], settings: GenerationSettings) -> str:
    """SHA-256 hex of the canonical JSON of a request."""
    return _body_key(request_body(spec, messages, tools, settings))


def _body_key(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _answers(entry: CacheEntry, key: str) -> bool:
    """The entry is the answer to `key`: it says so, and the request it holds (if any) hashes to it. A file
    copied under another request's name is not served."""
    return entry.key == key and (entry.request is None or _body_key(entry.request) == key)


class ResponseCache:
    """A folder of cached answers."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> AssistantTurn | None:
        """The cached turn (marked cached, usage zero: no call was made), or None on a miss or a torn file; a
        recorded ModelFault is raised again."""
        entry = self.entry(key)
        if entry is None:
            return None
        entry.raise_fault()
        return entry.turn.model_copy(update={"cached": True, "usage": Usage(cost_usd=0.0), "latency_s": 0.0})

    def entry(self, key: str) -> CacheEntry | None:
        """The stored entry as written (original usage and latency), or None (a miss, a torn file, or an entry
        that is not the answer to `key`)."""
        path = self._path(key)
        try:
            entry = CacheEntry.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError):
            return None
        return entry if _answers(entry, key) else None

    def put(self, key: str, spec: str, turn: AssistantTurn, request: dict[str, Any] | None = None,
            label: str | None = None, fault: dict[str, str] | None = None) -> None:
        """Store a turn (or a ModelFault: `fault`) atomically, with the request it answers when given."""
        entry = CacheEntry(key=key, spec=spec, turn=turn, request=request, label=label, fault=fault)
        atomic_write_text(self._path(key), entry.model_dump_json(indent=1) + "\n")

    def put_fault(self, key: str, spec: str, fault: ModelFault, request: dict[str, Any] | None = None) -> None:
        """Store a request's ModelFault: the same request fails the same way again without a call."""
        self.put(key, spec, AssistantTurn(message=Message(role="assistant", content="")), request,
                 fault={"kind": fault.kind, "message": str(fault)})
