"""`eval --server` on a generated server's console script with read-only scenarios: every episode is scored
on its transcript items, and the run says which checks could not run (state checks: no admin plane)."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.paths import generated_servers_dir
from envscaler_mcp.catalog.store import save_scenarios, scenarios_for
from envscaler_mcp.cli import app

SERVER = generated_servers_dir() / "ecommerce_orders"


def console_script(folder: Path, bin_dir: Path) -> Path:
    """The console script `pip install` writes for the server's [project.scripts] entry point."""
    scripts = tomllib.loads((folder / "pyproject.toml").read_text())["project"]["scripts"]
    ((name, target),) = scripts.items()
    module, func = target.split(":")
    script = bin_dir / name
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\n"
                      f"if __name__ == '__main__':\n    sys.exit({func}())\n")
    script.chmod(0o755)
    return script


@pytest.mark.slow
def test_eval_server_scores_every_read_only_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(SERVER))  # where pip would have put the package
    script = console_script(SERVER, tmp_path)
    read_only = [s for s in scenarios_for("ecommerce_orders") if s.reference_answer]
    save_scenarios(read_only, tmp_path / "read_only.jsonl")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--server", str(script), "--scenarios", str(tmp_path / "read_only.jsonl"),
                                      "--agent", "oracle", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    output = " ".join(result.output.split())
    assert "9 transcript check(s) (what the agent did and said) will be scored" in output
    assert "2 check(s) could not run (state checks: the server has no admin plane" in output
    assert "could not be scored" not in output
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == len(read_only) == 2
    for r in records:
        assert r["status"] == "completed" and r["scorable"] and r["score"] == 1.0 and r["success"] is True
        assert {c["status"] for c in r["checks"] if c["kind"] == "transcript"} == {"pass"}
        assert [c["status"] for c in r["checks"] if c["kind"] == "state"] == ["not_scorable"]
    html = (out / "report.html").read_text()
    assert "stated &#39;FE2026031410046&#39;" in html and "check(s) could not run" in html


def test_empty_checklists_are_not_blamed_on_the_admin_plane(tmp_path: Path) -> None:
    scenario = scenarios_for("ecommerce_orders")[0].model_copy(update={"checklist": []})
    save_scenarios([scenario.with_id()], tmp_path / "empty.jsonl")
    result = CliRunner().invoke(app, ["eval", "--env", "ecommerce_orders", "--scenarios", str(tmp_path / "empty.jsonl"),
                                      "--agent", "oracle", "--transport", "memory", "--out", str(tmp_path / "run"),
                                      "--no-progress"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    output = " ".join(result.output.split())
    assert "1 episode(s) could not be scored: the scenario's checklist is empty." in output
    assert "admin plane" not in output
