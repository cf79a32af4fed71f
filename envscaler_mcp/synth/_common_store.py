"""Resumable stage outputs and bounded concurrency, shared by every synthesis pipeline.

A stage writes each finished item as soon as it is done (one fsynced JSONL line, or one JSON file written
atomically), so a crash loses nothing finished and a rerun skips what is already on disk.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from envscaler_mcp._io import append_jsonl, atomic_write_json, atomic_write_text, iter_jsonl, read_json

T = TypeVar("T")


def short_hash(text: str, n: int = 12) -> str:
    """First `n` hex digits of sha256(text): stable ids for tasks and items."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def slugify(text: str, *, max_len: int = 48) -> str:
    """Lowercase snake_case id from free text ('Linux File System' -> 'linux_file_system')."""
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    slug = slug[:max_len].rstrip("_") or "env"
    return slug if slug[0].isalpha() else f"env_{slug}"


class JsonlLedger:
    """An append-only JSONL file of finished records, keyed by one field. Survives a torn last line."""

    def __init__(self, path: Path, key: str) -> None:
        self.path = Path(path)
        self.key = key
        self.records: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            raw = self.path.read_text(encoding="utf-8")
            if raw and not raw.endswith("\n"):
                # A write cut short by a crash: drop the torn line so the next append starts clean.
                atomic_write_text(self.path, raw[: raw.rfind("\n") + 1] if "\n" in raw else "")
            for _, record in iter_jsonl(self.path, skip_torn_tail=True):
                if isinstance(record, dict) and self.key in record:
                    self.records[str(record[self.key])] = record

    def __contains__(self, item_id: str) -> bool:
        return item_id in self.records

    def get(self, item_id: str) -> dict[str, Any] | None:
        """The finished record for `item_id`, if any."""
        return self.records.get(item_id)

    def add(self, record: dict[str, Any]) -> None:
        """Append a finished record (fsynced)."""
        append_jsonl(self.path, record)
        self.records[str(record[self.key])] = record


class ItemDir:
    """A folder holding one JSON file per finished item (`<id>.json`, written atomically)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, item_id: str) -> Path:
        """Where item `item_id` is stored."""
        return self.folder / f"{item_id}.json"

    def done(self, item_id: str) -> bool:
        """Whether item `item_id` is finished."""
        return self.path(item_id).exists()

    def write(self, item_id: str, value: Any) -> None:
        """Store a finished item atomically."""
        atomic_write_json(self.path(item_id), value)

    def read(self, item_id: str) -> Any:
        """Load a finished item."""
        return read_json(self.path(item_id))

    def all(self) -> list[Any]:
        """Every finished item, sorted by file name."""
        if not self.folder.exists():
            return []
        return [read_json(p) for p in sorted(self.folder.glob("*.json"))]


async def run_bounded(
    items: Iterable[T], worker: Callable[[T], Awaitable[None]], *, concurrency: int
) -> None:
    """Run `worker(item)` for every item, at most `concurrency` at a time. An exception in one worker
    cancels the rest and propagates (the first one, unwrapped from the task group's exception group, so the
    CLI can report it plainly); whatever finished is already on disk."""
    limiter = anyio.CapacityLimiter(max(1, concurrency))

    async def one(item: T) -> None:
        async with limiter:
            await worker(item)

    try:
        async with anyio.create_task_group() as tg:
            for item in items:
                tg.start_soon(one, item)
    except BaseExceptionGroup as group:
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup) and first.exceptions:
            first = first.exceptions[0]
        raise first from group


def dump_line(value: Any) -> str:
    """Compact one-line JSON for logs and prompts."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
