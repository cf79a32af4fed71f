"""The local model's prompt: compact function lines, and the on-disk KV cache of the environment prompt
(saved once, restored by later runs, corrupt or foreign files ignored)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import get_skeleton
from envscaler_mcp.providers import Message, ToolDef
from envscaler_mcp.providers.local.activity import ModelActivity
from envscaler_mcp.providers.local.kvcache import cache_entry, prune
from envscaler_mcp.providers.local.prompt import compact_tool_line, decision_system_prompt, type_text
from tests.providers.fakes import FakeServer, llama_stream
from tests.providers.test_provider_local import TOOLS, _local


def test_compact_line_has_name_typed_params_and_first_sentence() -> None:
    tool = ToolDef(name="list_loans", description="List loans by member.\n\nReturns:\n    {...}",
                   input_schema={"type": "object", "required": ["member_id"], "properties": {
                       "member_id": {"type": "string", "description": "The member."},
                       "status": {"anyOf": [{"type": "string", "enum": ["active", "lost"]}, {"type": "null"}]},
                       "limit": {"type": ["integer", "null"], "default": None},
                       "items": {"type": "array", "items": {"type": "object", "required": ["id"],
                                                            "properties": {"id": {"type": "string"},
                                                                           "qty": {"type": "integer"}}}}}})
    assert compact_tool_line(tool) == ('- list_loans: List loans by member.\n  parameters: member_id: str, '
                                       'status?: "active"|"lost", limit?: int, items?: list[{id: str, qty?: int}]')
    assert type_text({"type": ["string", "integer"]}) == "str|int" and type_text({}) == "any"


def test_compact_rendering_is_a_fraction_of_the_full_one() -> None:
    skeleton = get_skeleton("ecommerce_orders")
    tools = [ToolDef(name=t.name, description=t.description, input_schema=t.input_schema) for t in skeleton.tools]
    compact = decision_system_prompt("", tools, "compact")
    full = decision_system_prompt("", tools, "full")
    assert len(tools) == 22 and all(f"- {t.name}: " in compact for t in tools)
    # ~3.5 characters per token for this text: 22 tools in about 800 tokens, against about 3,300 in full
    assert len(compact) < 5000 < 0.4 * len(full)


def _slot_fake(server: Any, calls: list[tuple[str, str]], refuse: bool = False) -> None:
    """Plays llama.cpp's slot endpoints: save writes a state file into the cache folder, restore reads one."""
    def slot_action(action: str, filename: str, timeout_s: float = 120.0) -> dict[str, object] | None:
        calls.append((action, filename))
        path = server.prompt_cache / filename
        if action == "save":
            path.write_bytes(b"KV" * 1000)
            return {"n_saved": 1000}
        return None if refuse or not path.exists() else {"n_restored": 1000}
    server.slot_action = slot_action


def _cached_local(fake: FakeServer, folder: Path, calls: list[tuple[str, str]], refuse: bool = False) -> Any:
    """A local provider (a new 'run': its server's slot is empty) whose prompt cache lives in `folder`."""
    p = _local(fake)
    p.server.prompt_cache = folder
    _slot_fake(p.server, calls, refuse)
    return p


def _answers(fake: FakeServer, n: int) -> None:
    decision = json.dumps({"plan": "p", "tool_calls": [{"name": "get_order", "arguments": {"order_id": "A"}}],
                           "reply": ""})
    fake.answers += [(200, llama_stream(decision, prompt=500, completion=20)) for _ in range(n)]


@pytest.mark.anyio
async def test_environment_prompt_is_saved_once_and_restored_by_the_next_run(fake: FakeServer,
                                                                            tmp_path: Path) -> None:
    _answers(fake, 4)
    history = [Message(role="system", content="Shop agent."), Message(role="user", content="Where is A?")]
    calls: list[tuple[str, str]] = []
    first = _cached_local(fake, tmp_path, calls)
    await first.complete(history, TOOLS)
    await first.complete([history[0], Message(role="user", content="And B?")], TOOLS)
    (saved,) = [f for a, f in calls if a == "save"]
    assert [a for a, _ in calls] == ["save"]  # the second task of the same run reuses the slot as it is
    bins = sorted(tmp_path.glob("*.bin"))
    assert len(bins) == 1 and saved.endswith(".tmp") and not list(tmp_path.glob("*.tmp"))
    meta = json.loads(bins[0].with_suffix(".json").read_text())
    assert meta["tokens"] == 520 and meta["fields"]["model_sha256"] == first.weights.sha256

    calls.clear()
    second = _cached_local(fake, tmp_path, calls)
    await second.complete(history, TOOLS)
    assert calls == [("restore", bins[0].name)]

    calls.clear()
    bins[0].write_bytes(b"KV" * 999 + b"XX")  # corrupt: same size, other bytes
    third = _cached_local(fake, tmp_path, calls)
    await third.complete(history, TOOLS)
    assert [a for a, _ in calls] == ["save"]  # never handed to the server; read again and saved anew
    assert bins[0].read_bytes() == b"KV" * 1000


@pytest.mark.anyio
async def test_a_file_the_server_refuses_is_read_again(fake: FakeServer, tmp_path: Path) -> None:
    _answers(fake, 2)
    history = [Message(role="system", content="Shop agent."), Message(role="user", content="Where is A?")]
    calls: list[tuple[str, str]] = []
    await _cached_local(fake, tmp_path, calls).complete(history, TOOLS)
    calls.clear()
    q = _cached_local(fake, tmp_path, calls, refuse=True)
    turn = await q.complete(history, TOOLS)
    # the turn still happens, and the refused file is replaced by one this server wrote
    assert [a for a, _ in calls] == ["restore", "save"] and turn.message.tool_calls


def test_entry_key_covers_model_runtime_settings_and_prompt(tmp_path: Path) -> None:
    base = {"model_sha256": "a" * 64, "runtime": "xllamacpp==1", "settings": {"ctx": 8192}, "prefix": "P"}
    keys = {cache_entry(tmp_path, **{**base, **change}).key  # type: ignore[arg-type]
            for change in ({}, {"model_sha256": "b" * 64}, {"runtime": "xllamacpp==2"},
                           {"settings": {"ctx": 4096}}, {"prefix": "P "})}
    assert len(keys) == 5


def test_foreign_or_half_written_entries_are_ignored_and_removed(tmp_path: Path) -> None:
    entry = cache_entry(tmp_path, model_sha256="a" * 64, runtime="r", settings={}, prefix="P")
    entry.bin_path.write_bytes(b"state")
    assert not entry.valid() and not entry.bin_path.exists()  # no sidecar: half-written
    (tmp_path / entry.temp_name()).write_bytes(b"state")
    assert entry.commit(tokens=5) and entry.valid()
    other = cache_entry(tmp_path, model_sha256="b" * 64, runtime="r", settings={}, prefix="P")
    other.bin_path.write_bytes(b"state")
    other.meta_path.write_text(entry.meta_path.read_text())  # another key's sidecar copied under this name
    assert not other.valid() and not other.meta_path.exists()
    entry.meta_path.write_text("{not json")
    assert not entry.valid() and not entry.bin_path.exists()


def test_prune_keeps_the_most_recently_used(tmp_path: Path) -> None:
    entries = []
    for i in range(3):
        entry = cache_entry(tmp_path, model_sha256="a" * 64, runtime="r", settings={}, prefix=str(i))
        (tmp_path / entry.temp_name()).write_bytes(b"x" * 100)
        entry.commit(tokens=1)
        entries.append(entry)
    entries[0].valid()  # used now: newest
    prune(tmp_path, max_bytes=250)
    assert [e.bin_path.exists() for e in entries] == [True, False, True] or \
        [e.bin_path.exists() for e in entries] == [True, True, False]
    assert entries[0].bin_path.exists()


def test_activity_lines() -> None:
    activity = ModelActivity()
    assert activity.describe() == ""
    activity.set("loading")
    assert activity.describe().startswith("local model: loading")
    activity.prompt_progress({"total": 1500, "cache": 0, "processed": 512, "time_ms": 4000})
    assert activity.describe() == "local model: reading the prompt 512/1500 tokens, 128 tok/s"
    activity.token()
    activity.token()
    assert activity.describe().startswith("local model: generating 2 tokens")



def test_threads_default_to_the_usable_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from envscaler_mcp.providers.local.server import auto_threads

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert auto_threads() == 2
