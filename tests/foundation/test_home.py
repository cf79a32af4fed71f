"""An import folder is a catalog like the bundled one: every command takes --home (or ENVSCALER_MCP_HOME)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.paths import (
    data_root,
    generated_servers_dir,
    package_root,
    set_home,
    templates_dir,
)
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import RunConfig, build_plan
from envscaler_mcp.harness.external import external_warning
from envscaler_mcp.interop.from_envscaler import import_envscaler
from envscaler_mcp.launch.target import resolve_target
from envscaler_mcp.render import read_manifest
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import Provenance

ES = Path(__file__).resolve().parents[1] / "fixtures" / "envscaler"
ENVS, SCENARIOS, BAD = ES / "env_metadata.json", ES / "scenario_metadata.json", ES / "env_metadata_bad.json"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ENVSCALER_MCP_HOME", raising=False)
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "data"
    result = CliRunner().invoke(app, ["import", "envscaler", "--envs", str(ENVS), "--scenarios", str(SCENARIOS),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def test_home_moves_data_but_not_templates(home: Path) -> None:
    set_home(home)
    assert data_root() == home.resolve() and generated_servers_dir() == home.resolve() / "generated_servers"
    assert templates_dir() == package_root() / "templates" and (templates_dir() / "server").is_dir()


@pytest.mark.parametrize("how", ["option", "variable"])
def test_list_and_show_read_the_home(home: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "variable":
        monkeypatch.setenv("ENVSCALER_MCP_HOME", str(home))
    extra = ["--home", str(home)] if how == "option" else []
    code, out = _run("list", *extra)
    assert code == 0 and "env_1" in out and "env_2" in out and "ecommerce_orders" not in out
    code, out = _run("show", "env_2", *extra)
    assert code == 0 and "Scenarios (2)" in out


def test_render_an_imported_environment_with_its_scenarios(home: Path, tmp_path: Path) -> None:
    code, out = _run("render", "env_2", "--home", str(home))
    assert code == 0 and "2 scenarios" in out, out
    assert read_manifest(home / "generated_servers" / "env_2") is not None
    set_home(None)
    code, out = _run("render", str(home / "environments" / "env_2"), "--out", str(tmp_path / "r"))
    assert code == 0 and "2 scenarios" in out, out  # a skeleton in a data home finds its scenarios there


def test_serve_target_resolves_in_the_home(home: Path) -> None:
    set_home(home)
    server = resolve_target("env_2")
    spec = json.loads((server.path / server.package / "spec.json").read_text(encoding="utf-8"))
    assert server.env_id == "env_2" and spec


def test_eval_plans_an_imported_skeleton_without_scenarios_flag(home: Path) -> None:
    plans = build_plan(RunConfig(envs=[str(home / "environments" / "env_2")], agent="mock"))
    assert [p.env_id for p in plans] == ["env_2"] and plans[0].count() == 2
    set_home(home)
    plans = build_plan(RunConfig(all_envs=True, agent="mock"))
    assert sorted(p.env_id for p in plans) == ["env_1", "env_2"]


def test_oracle_refuses_scenarios_without_a_reference_solution(home: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "--home", str(home), "--env", "env_2", "--agent", "oracle",
                                      "--out", str(tmp_path / "run"), "--no-progress"])
    assert isinstance(result.exception, UsageError) and result.exception.exit_code == 2  # main() exits with it
    assert "2 of the 2 selected scenario(s) have none" in str(result.exception)
    assert not (tmp_path / "run").exists()  # refused before any server started or file was written


def test_gate_says_how_many_lack_a_reference(home: Path) -> None:
    code, out = _run("scenarios", "check", "env_2", "--home", str(home), "--transport", "memory")
    assert code == 1 and "2 of 2 scenario(s) have no reference solution" in out.replace("\n", " ")
    assert "rejected (pass --allow-no-reference" in out.replace("\n", " ")


def test_export_reads_the_home(home: Path, tmp_path: Path) -> None:
    code, _ = _run("export", "envscaler", "--home", str(home), "--out", str(tmp_path / "x"))
    scenarios = json.loads((tmp_path / "x" / "scenario_metadata.json").read_text(encoding="utf-8"))
    assert code == 0 and len(scenarios) == 3


def test_home_must_be_a_folder(tmp_path: Path) -> None:
    code, out = _run("list", "--home", str(tmp_path / "nowhere"))
    assert code == 2 and "is not a folder" in re.sub(r"[\s│]+", " ", out)


def test_a_failed_environment_is_one_error_line(tmp_path: Path) -> None:
    items = json.loads(BAD.read_text(encoding="utf-8"))
    first = next(iter(items)) if isinstance(items, dict) else items[0]["env_id"]
    scen = tmp_path / "s.json"
    scen.write_text(json.dumps([{"env_id": first, "task": f"t{i}", "init_config": {}} for i in range(7)]
                               + [{"env_id": "env_404", "task": f"u{i}", "init_config": {}} for i in range(4)]))
    result = import_envscaler(BAD, scen)
    errors = [e for e in result.errors if f"env '{first}'" in e]
    assert len(errors) == 1 and "its 7 scenario(s) were skipped" in errors[0] and "\n" not in errors[0]
    unknown = [e for e in result.errors if "env_404" in e]
    assert len(unknown) == 1 and "its 4 scenario(s)" in unknown[0]


def test_external_warning_names_empty_checklists() -> None:
    empty = Scenario(env_id="e", task="t", initial_state={}, checklist=[], provenance=Provenance(source="hand-authored")).with_id()
    text = external_warning([empty])
    assert "empty checklist" in text and "have empty checklists, so no episode can be scored" in text


def test_import_writes_an_index_that_list_and_show_use(home: Path) -> None:
    from envscaler_mcp.catalog.store import count_scenarios, index_path, scenario_index

    path = home / "scenarios" / "env_2.jsonl"
    rows = json.loads(index_path(path).read_text(encoding="utf-8"))["scenarios"]
    assert [r["id"] for r in rows] == [json.loads(line)["id"] for line in path.read_text().splitlines()]
    # a fresh index is trusted: prove it by making the file unparsable while keeping its size and mtime
    stat = path.stat()
    path.write_bytes(b"x" * stat.st_size)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert scenario_index(path) == rows and count_scenarios(path) == 2
    code, out = _run("show", "env_2", "--home", str(home))
    assert code == 0 and rows[0]["id"] in out
    path.write_bytes(b"x\n" * 3)  # changed: the index is stale, counting falls back to the file's lines
    assert count_scenarios(path) == 3
