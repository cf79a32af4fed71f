"""`envscaler-mcp synth envs` through the CLI (the provider factory is replaced by the fixture router)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import envscaler_mcp.providers as providers
from envscaler_mcp.cli import app
from envscaler_mcp.providers.mock import MockProvider


def test_synth_envs_mine_stage(tmp_path, monkeypatch, router, corpus):
    specs: list[str] = []

    def fake_get_provider(spec, **_):
        specs.append(spec)
        return MockProvider([router], repeat_last=True, spec=spec)

    monkeypatch.setattr(providers, "get_provider", fake_get_provider, raising=False)
    out = tmp_path / "out"
    args = ["synth", "envs", "--tasks", str(corpus), "--model", "mock/gen", "--checker-model", "mock/judge",
            "--out", str(out), "--stage", "mine", "--limit", "3", "--concurrency", "2"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert specs == ["mock/gen", "mock/judge"]
    assert "Usage per stage" in result.output and "mine" in result.output
    assert all(f"[mine {i}/3] " in result.output for i in (1, 2, 3))  # one progress line per finished task
    assert (out / "synth.log").read_text().count("[mine") == 4  # the same lines, and the stage's start
    assert len((out / "mine" / "judged.jsonl").read_text().splitlines()) == 3
    assert json.loads((out / "summary.json").read_text())["counts"]["judged"] == 3

    again = CliRunner().invoke(app, args)
    assert again.exit_code != 0 and "--resume" in str(again.exception)
    bad = CliRunner().invoke(app, [*args[:-4], "--stage", "everything", "--resume"])
    assert bad.exit_code == 2 and "'everything' is not one of" in bad.output
