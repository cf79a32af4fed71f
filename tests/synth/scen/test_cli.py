"""`envscaler-mcp synth scenarios` through the CLI: provider factory replaced by the fixture router, the
environment started as a real HTTP server (the command's default)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import envscaler_mcp.providers as providers
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.cli import app
from envscaler_mcp.providers.mock import MockProvider
from tests.synth.fixtures.scen_router import ScenRouter

SKELETON = Path(__file__).resolve().parents[2] / "fixtures" / "mini_shop" / "skeleton.json"


def test_synth_scenarios_over_http(tmp_path, monkeypatch):
    specs: list[str] = []

    def fake_get_provider(spec, **_):
        specs.append(spec)
        return MockProvider([ScenRouter("mini_shop")], repeat_last=True, spec=spec)

    monkeypatch.setattr(providers, "get_provider", fake_get_provider, raising=False)
    out = tmp_path / "sets"
    args = ["synth", "scenarios", str(SKELETON), "-n", "1", "--model", "mock/gen", "--solver-model", "mock/solver",
            "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert specs == ["mock/gen", "mock/solver"]
    assert "Usage per stage" in result.output and "validators" in result.output
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert sc.provenance.models == {"generator": "mock/gen", "solver": "mock/solver"}

    again = CliRunner().invoke(app, args)
    assert again.exit_code != 0 and "--resume" in str(again.exception)
    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert len(load_scenarios(out / "mini_shop.jsonl")) == 1


def test_synth_scenarios_needs_an_environment_and_a_model():
    result = CliRunner().invoke(app, ["synth", "scenarios", "--model", "mock/x"])
    assert result.exit_code != 0 and "--all" in str(result.exception)
    result = CliRunner().invoke(app, ["synth", "scenarios", "mini_shop"])
    assert result.exit_code != 0 and "--model is required" in str(result.exception)
