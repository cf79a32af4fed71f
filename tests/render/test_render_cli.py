"""`envscaler-mcp render`: renders skeleton paths or catalog ids, and `--check` reports stale servers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.store import save_skeleton
from envscaler_mcp.cli import app
from envscaler_mcp.skeleton.models import EnvSkeleton
from tests.render.fixture_env import skeleton


def test_render_and_check(tmp_path: Path) -> None:
    path = save_skeleton(skeleton(), tmp_path / "envs")
    out = tmp_path / "servers"
    runner = CliRunner()
    stale = runner.invoke(app, ["render", str(path), "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "STALE" in stale.output
    first = runner.invoke(app, ["render", str(path), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "rendered" in first.output and (out / "fixture_shop" / "manifest.json").is_file()
    again = runner.invoke(app, ["render", str(path), "--out", str(out)])
    assert "up to date" in again.output
    check = runner.invoke(app, ["render", str(path), "--out", str(out), "--check"])
    assert check.exit_code == 0 and "current" in check.output


def test_render_needs_a_target() -> None:
    result = CliRunner().invoke(app, ["render"])
    assert result.exit_code != 0


def test_render_reads_each_skeleton_when_its_turn_comes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`render --all` of 1,000 environments held every skeleton at once (0.7 GB): each is read just before its
    server is rendered, and every name is still checked before anything is written."""
    from envscaler_mcp.catalog import store
    from envscaler_mcp.render import engine

    paths = [save_skeleton(skeleton().model_copy(update={"id": f"shop_{n}"}), tmp_path / "envs") for n in range(3)]
    out, steps = tmp_path / "servers", []
    load, render = store.load_skeleton, engine.render_server

    def loading(path: Path) -> EnvSkeleton:
        loaded = load(path)
        steps.append(f"read {loaded.id}")
        return loaded

    def rendering(sk: EnvSkeleton, *args: Any, **kwargs: Any) -> Path:
        steps.append(f"render {sk.id}")
        return render(sk, *args, **kwargs)

    monkeypatch.setattr(store, "load_skeleton", loading)
    monkeypatch.setattr(engine, "render_server", rendering)
    unknown = CliRunner().invoke(app, ["render", *map(str, paths), "no_such_env", "--out", str(out)])
    assert unknown.exit_code != 0 and "no_such_env" in str(unknown.exception) and not out.exists() and not steps
    result = CliRunner().invoke(app, ["render", *map(str, paths), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert steps == [f"{step} shop_{n}" for n in range(3) for step in ("read", "render")]
    assert sorted(p.name for p in out.iterdir()) == ["shop_0", "shop_1", "shop_2"]


def test_a_stored_set_is_read_once_for_its_hash_and_once_for_its_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering a server from a stored scenario set reads each scenario (its state parsed) twice: for the
    scenarios' hash and for data/scenarios.json. The names, checks and README come from the set's headers."""
    from envscaler_mcp.catalog import store
    from envscaler_mcp.render.engine import is_current, render_server
    from tests.render.fixture_env import scenarios

    sk = skeleton()
    path = tmp_path / "scenarios.jsonl"
    store.save_scenarios(list(scenarios()), path, index=True)
    read: list[str] = []
    load = store.load_scenario_line
    monkeypatch.setattr(store, "load_scenario_line", lambda *args: read.append(args[2]) or load(*args))
    stored = store.StoredScenarios(path)
    out = render_server(sk, stored, tmp_path / "server")
    ids = [s.id for s in scenarios()]
    assert len(ids) >= 2 and sorted(read) == sorted(ids * 2)
    assert is_current(out, sk, list(scenarios()))  # the same server as from the scenarios in memory
