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

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._io import atomic_write_text
from envscaler_mcp._usage import Usage
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef


class CacheEntry(BaseModel):
    """One cached answer (file `<dir>/<key[:2]>/<key>.json`)."""

    key: str = Field(description="SHA-256 of the canonical request.")
    spec: str = Field(description="Provider spec that produced the answer.")
    turn: AssistantTurn = Field(description="The answer as first received, with its original usage.")


def request_key(spec: str, messages: Sequence[Message], tools: Sequence[ToolDef], settings: GenerationSettings) -> str:
    """SHA-256 hex of the canonical JSON of a request."""
    body = {
        "spec": spec,
        "messages": [m.model_dump(mode="json") for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "settings": settings.model_dump(mode="json", exclude={"timeout_s"}),
    }
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """A folder of cached answers."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> AssistantTurn | None:
        """The cached turn (marked cached, usage zero: no call was made), or None on a miss or a torn file."""
        path = self._path(key)
        if not path.exists():
            return None
        try:
            entry = CacheEntry.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError):
            return None
        return entry.turn.model_copy(update={"cached": True, "usage": Usage(cost_usd=0.0), "latency_s": 0.0})

    def put(self, key: str, spec: str, turn: AssistantTurn) -> None:
        """Store a turn atomically."""
        entry = CacheEntry(key=key, spec=spec, turn=turn)
        atomic_write_text(self._path(key), entry.model_dump_json(indent=1) + "\n")
