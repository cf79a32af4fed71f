"""The render cache: a size cap (least recently used first), `cache clean`, and servers without states."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from envscaler_mcp.cli import main
from envscaler_mcp.harness.config import RunConfig, build_plan
from envscaler_mcp.harness.run import open_source
from envscaler_mcp.render.cache import cache_root, ensure_rendered, prune_cache
from tests.render.fixture_env import scenarios, skeleton

DAY = 86400.0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    root = cache_root()
    root.mkdir(parents=True)
    return root


def _server(root: Path, name: str, size: int, age_s: float) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"x" * size)
    used = time.time() - age_s
    os.utime(folder, (used, used))
    return folder


def test_prune_removes_least_recently_used_first_down_to_the_cap(cache: Path) -> None:
    old = _server(cache, "old", 400_000, 3 * DAY)
    middle = _server(cache, "middle", 400_000, 2 * DAY)
    recent = _server(cache, "recent", 400_000, DAY)
    pruned = prune_cache(900_000)
    assert [c.path for c in pruned.removed] == [old]
    assert not old.exists() and middle.exists() and recent.exists()
    assert pruned.freed == 400_000


def test_prune_keeps_folders_in_use(cache: Path) -> None:
    in_use = _server(cache, "in-use", 400_000, 10)
    kept = _server(cache, "kept", 400_000, DAY)
    stale = _server(cache, "stale", 400_000, 2 * DAY)
    prune_cache(0, keep=kept)
    assert in_use.exists() and kept.exists() and not stale.exists()


def test_rendering_prunes_to_the_configured_cap(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE_MAX_MB", "0.5")
    stale = _server(cache, "stale", 600_000, DAY)
    out = ensure_rendered(skeleton(), scenarios())
    assert out.is_dir() and not stale.exists()
    assert ensure_rendered(skeleton(), scenarios()) == out  # a hit keeps it


def test_each_rendered_folder_is_measured_once(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning after each of 1,000 servers rendered walked every folder of the cache each time: a folder in
    place is measured once per process, a staging folder (being written) each time, and the sizes still add up
    to what is on disk when folders come and go."""
    from envscaler_mcp.render import cache as cache_module

    walked: list[str] = []
    size = cache_module._size
    monkeypatch.setattr(cache_module, "_size", lambda path: walked.append(path.name) or size(path))
    servers = [_server(cache, f"env{n}-0123456789abcdef", 1_000, DAY + n) for n in range(5)]
    staging = _server(cache, ".env9-0123.tmp", 2_000, DAY)
    assert prune_cache(10**9).freed == 0 and sorted(walked) == sorted([s.name for s in servers] + [staging.name])
    walked.clear()
    (staging / "more.bin").write_bytes(b"y" * 3_000)
    kept = prune_cache(10**9).kept
    assert walked == [staging.name] and sum(c.size for c in kept) == 5 * 1_000 + 5_000
    pruned = prune_cache(3_000 + 5_000)  # the two least recently used go
    assert sorted(c.path.name for c in pruned.removed) == ["env3-0123456789abcdef", "env4-0123456789abcdef"]
    assert not servers[3].exists() and not servers[4].exists() and pruned.freed == 2_000


def test_cache_clean_command(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stale = _server(cache, "stale", 1000, DAY)
    in_use = _server(cache, "in-use", 1000, 10)
    for args, code in ((["cache", "clean"], 0), (["cache", "clean", "--force"], 0),
                       (["cache", "clean", "--max-mb", "-1"], 2)):
        with pytest.raises(SystemExit) as exc:
            main(args)
        assert exc.value.code == code
        if args == ["cache", "clean"]:
            assert not stale.exists() and in_use.exists()
            assert "removed 1 server(s)" in capsys.readouterr().out
    assert not in_use.exists()


@pytest.mark.anyio
async def test_eval_server_copy_holds_no_initial_states(cache: Path, tmp_path: Path) -> None:
    (plan,) = build_plan(RunConfig(envs=["library_loans"], agent="mock", limit=2))
    config = RunConfig(envs=["library_loans"], agent="mock", transport="stdio")
    async with open_source(plan, config) as source:
        server_dir = source.server_dir  # type: ignore[attr-defined]
        assert server_dir is not None and server_dir.path.parent == cache
        bundled = json.loads((server_dir.path / server_dir.package / "data" / "scenarios.json").read_text())
        assert bundled == []


@pytest.mark.anyio
async def test_a_long_stdio_run_keeps_its_cached_server(cache: Path) -> None:
    """A stdio run starts a process from the cached folder for each episode: a run longer than the in-use
    window must not see its folder pruned under it (the next episode could not start)."""
    from envscaler_mcp.launch import launch_server

    folder = ensure_rendered(skeleton(), [])
    async with launch_server(folder, "stdio", scenarios=(), stdio_prestart=0) as server:
        hour_ago = time.time() - 3600
        os.utime(folder, (hour_ago, hour_ago))  # the run has been going for an hour
        async with server.episode(scenarios()[0].initial_state) as ep:
            assert not (await ep.call_tool("list_items", {})).is_error
        prune_cache(0)
        assert folder.is_dir()
        async with server.episode(scenarios()[0].initial_state) as ep:
            assert await ep.get_state() == scenarios()[0].initial_state


def test_the_default_cap_holds_a_thousand_environments_servers(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """eval and the gate render each catalog environment's server into the cache (without scenarios) and go
    through a catalog in the same order: a cap below what the run's servers take makes each command find none
    of the next ones kept. The default holds 1,000 servers of the bundled environment with the most code and
    state, each measured as the cache measures it, with room to spare."""
    from envscaler_mcp.catalog.store import get_skeleton
    from envscaler_mcp.render.cache import DEFAULT_MAX_MB, cached_servers, max_cache_bytes

    monkeypatch.delenv("ENVSCALER_MCP_CACHE_MAX_MB", raising=False)
    assert max_cache_bytes() == DEFAULT_MAX_MB * 1_000_000
    ensure_rendered(get_skeleton("clinic_appointments"), [])
    [server] = cached_servers()
    assert server.size > 300_000  # its code, default state, runtime and the runtime's .pyc
    assert 1_000 * server.size * 1.3 <= max_cache_bytes(), server.size
