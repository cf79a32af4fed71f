"""The `eval` command line: option checks, a full run on mini_shop with the oracle, Ctrl-C and resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from tests.harness.shop import MINI_SHOP

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "x"], "--agent"),
        (["--env", "x", "--agent", "oracle", "--mode", "conversation"], "--user"),
        (["--env", "x", "--agent", "oracle", "--resume"], "--out"),
        (["--agent", "oracle"], "--env ENV"),
        (["--agent", "oracle", "--url", "http://127.0.0.1:9/mcp"], "--scenarios"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["eval", *args, "--out", str(tmp_path / "run"), "--no-progress"]
        if "--resume" not in args
        else ["eval", *args],
    )
    assert result.exit_code != 0
    assert message in str(result.exception)


@pytest.mark.parametrize(("option", "value"), [("--transport", "pigeon"), ("--mode", "chat"),
                                               ("--observation", "maybe"), ("--success", "checklist+luck")])
def test_enumerations_are_choices(option: str, value: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", "--env", "x", "--agent", "oracle", option, value,
                                 "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and not (tmp_path / "run").exists()
    assert option in result.output and f"'{value}' is not one of" in result.output


def test_observation_and_success_options_reach_every_episode(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "memory",
                                 "--out", str(out), "--no-progress", "--observation", "off",
                                 "--success", "checklist+observation"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["observation"]["status"] for r in records] == ["not_applicable"] * 2
    assert {r["observation"]["reason"] for r in records} == {"the observation check is turned off (--observation off)"}
    assert json.loads((out / "run.json").read_text())["config"]["episode"]["observation"] == "off"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success_rule"] == "checklist+observation" and summary["overall"]["observation_not_applicable"] == 2
    assert "2 n/a" in result.output  # the observation column, shown when the check did not apply


def test_eval_runs_prints_the_table_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "eval",
            "--env",
            str(MINI_SHOP),
            "--agent",
            "oracle",
            "--transport",
            "memory",
            "--out",
            str(out),
            "--no-progress",
        ],
        env={"COLUMNS": "400"},  # the report's whole path on one line (a longer tmp_path would wrap it)
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "mini_shop" in result.output and "100.0%" in result.output and "report.html" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 2 and summary["overall"]["success_rate"] == 1.0
    assert (out / "report.html").exists()
    again = runner.invoke(
        app,
        [
            "eval",
            "--env",
            str(MINI_SHOP),
            "--agent",
            "oracle",
            "--transport",
            "memory",
            "--out",
            str(out),
            "--no-progress",
            "--resume",
        ],
    )
    assert again.exit_code == 0 and len((out / "results.jsonl").read_text().splitlines()) == 2


@pytest.mark.slow
@pytest.mark.timeout(360)  # its own deadlines (60 s to a first result, 60 s to end) and a resume: 130 s at load 35
def test_ctrl_c_keeps_finished_episodes_and_the_run_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "envscaler_mcp",
        "eval",
        "--env",
        str(MINI_SHOP),
        "--agent",
        "oracle",
        "--transport",
        "stdio",
        "--trials",
        "3",  # 6 episodes: the run is still going when the signal comes (after the first)
        "--concurrency",
        "1",
        "--out",
        str(out),
        "--no-progress",
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        # as a terminal's foreground job gets it, even when the suite runs as a script's background job (SIGINT
        # ignored, and inherited: the run then ignored the Ctrl-C and finished)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (results.exists() and results.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output
    kept = results.read_text().count("\n")
    assert 1 <= kept < 6 and "--resume" in output and (out / "summary.json").exists()
    again = runner.invoke(app, [*cmd[3:], "--resume"])
    assert again.exit_code == 0, again.output
    pairs = [(r["scenario_id"], r["trial"]) for r in map(json.loads, results.read_text().splitlines())]
    assert len(pairs) == len(set(pairs)) == 6


@pytest.mark.parametrize(("max_infra", "code"), [("0.1", 3), ("1", 0)])
def test_too_many_infra_errors_fail_the_command(tmp_path: Path, max_infra: str, code: int) -> None:
    # The mock agent has an empty script: its first call fails like a provider outage (infrastructure).
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "mock", "--transport", "memory", "--infra-retries", "0",
            "--out", str(tmp_path / "run"), "--no-progress", "--max-infra", max_infra]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output + repr(result.exception)
    assert "2 of 2 episode(s) (100.0%) failed on infrastructure errors" in result.output
    assert ("exceed --max-infra 10%" in result.output) == (code == 3)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["overall"]["infra_share"] == 1.0


def test_the_isolation_in_force_is_recorded_in_run_json_the_summary_and_the_report(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "memory", "--out", str(out),
            "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    isolation = json.loads((out / "run.json").read_text())["isolation"]
    assert set(isolation) == {"validators", "server:mini_shop"}
    assert "seccomp" in {layer["name"] for layer in isolation["validators"]["layers"]}
    # The memory transport runs the environment in the harness process: no OS layer can apply, and it says so.
    assert isolation["server:mini_shop"]["level"] == "off"
    assert "reduced isolation" in result.output and "server:mini_shop off" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["isolation"]["server:mini_shop"] == "off"
    assert summary["isolation"]["validators"] == isolation["validators"]["level"]
    assert "server:mini_shop <b>off</b>" in (out / "report.html").read_text()
