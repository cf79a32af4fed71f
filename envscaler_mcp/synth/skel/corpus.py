"""Read a task corpus (API-Bank, ToolACE or plain `{"task": ...}` lines) and apply the cheap filters."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from envscaler_mcp.errors import InputFileError
from envscaler_mcp.synth._common_store import short_hash

API_BANK_MARKERS = ("TIME:", "Generate API Request:", "API-Request:", "AI:")
MULTIMODAL_WORDS = ("image", "photo", "picture", "video", "audio", "sound", "speech", "clip")
BLOCKED_PHRASES = ("Role definition:",)
# Typographic characters that English text often carries; anything else outside ASCII marks non-English text.
_ALLOWED_NON_ASCII = set("\u2018\u2019\u201c\u201d\u2013\u2014\u2026\u00a0")
_MULTIMODAL_RE = re.compile(r"\b(" + "|".join(MULTIMODAL_WORDS) + r")s?\b", re.I)
_URL_EMAIL_RE = re.compile(r"https?://|www\.|\.com\b|\.org\b|\.net\b|[\w.+-]+@[\w-]+\.[\w.]+", re.I)


class CorpusTask(BaseModel):
    """One user query taken from the corpus."""

    task_id: str = Field(description="sha256 prefix of the query text.")
    task: str = Field(description="The user query.")
    source: str = Field(description="'api-bank', 'toolace' or 'plain'.")
    line: int = Field(description="1-based record number in the corpus file.")


def api_bank_query(record_input: str) -> str | None:
    """The user's query in an API-Bank `input`: text after the first `User:` up to the first marker."""
    start = record_input.find("User:")
    if start < 0:
        return None
    rest = record_input[start + len("User:") :]
    cut = min((i for i in (rest.find(m) for m in API_BANK_MARKERS) if i >= 0), default=len(rest))
    return rest[:cut].strip()


def toolace_query(conversations: list[Any]) -> str | None:
    """The first turn of a ToolACE conversation, when a user wrote it."""
    if not conversations or not isinstance(conversations[0], dict):
        return None
    first = conversations[0]
    speaker = first.get("from", first.get("role"))
    if speaker not in ("user", "human"):
        return None
    value = first.get("value", first.get("content"))
    return value.strip() if isinstance(value, str) else None


def record_query(record: Any) -> tuple[str, str] | None:
    """(query, source) for one corpus record of any supported shape, or None when it has no query."""
    if isinstance(record, str):
        return record.strip(), "plain"
    if not isinstance(record, dict):
        return None
    if isinstance(record.get("task"), str):
        return record["task"].strip(), "plain"
    if isinstance(record.get("input"), str) and "instruction" in record:
        query = api_bank_query(record["input"])
        return (query, "api-bank") if query else None
    if isinstance(record.get("conversations"), list):
        query = toolace_query(record["conversations"])
        return (query, "toolace") if query else None
    return None


def load_records(path: Path) -> list[Any]:
    """Records of a JSON list file or a JSONL file."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "task corpus not found", "pass --tasks with a JSON list or JSONL file")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputFileError(path, f"not valid JSON (line {exc.lineno}): {exc.msg}") from exc
        return list(value)
    records = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputFileError(path, f"line {n} is not valid JSON: {exc.msg}",
                                     "use one JSON object per line, or a JSON list") from exc
    return records


def reject_reason(query: str) -> str | None:
    """Why a query fails the cheap filters, or None when it passes."""
    if len(query.split()) < 3:
        return "too-short"
    if any(ord(ch) > 126 and ch not in _ALLOWED_NON_ASCII for ch in query):
        return "non-english"
    if _MULTIMODAL_RE.search(query):
        return "multimodal"
    if _URL_EMAIL_RE.search(query):
        return "url-or-email"
    if any(p.lower() in query.lower() for p in BLOCKED_PHRASES):
        return "blocked-phrase"
    return None


def collect_tasks(path: Path, *, limit: int | None = None) -> tuple[list[CorpusTask], dict[str, int]]:
    """Read the corpus, keep queries passing the cheap filters, drop exact duplicates.

    Returns (tasks in corpus order, at most `limit`; counts per outcome).
    """
    stats: Counter[str] = Counter()
    seen: set[str] = set()
    tasks: list[CorpusTask] = []
    for line, record in enumerate(load_records(path), start=1):
        stats["records"] += 1
        parsed = record_query(record)
        if parsed is None or not parsed[0]:
            stats["no-query"] += 1
            continue
        query, source = parsed
        query = " ".join(query.split())
        reason = reject_reason(query)
        if reason:
            stats[reason] += 1
            continue
        key = query.lower()
        if key in seen:
            stats["duplicate"] += 1
            continue
        seen.add(key)
        if limit is not None and len(tasks) >= limit:
            stats["over-limit"] += 1
            continue
        tasks.append(CorpusTask(task_id=short_hash(query), task=query, source=source, line=line))
    stats["kept"] = len(tasks)
    return tasks, dict(stats)
