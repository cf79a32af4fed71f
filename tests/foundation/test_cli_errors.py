"""Bad input on the command line: one clear line on stderr, exit code 2, no traceback, nothing left behind.

Each case runs the real entry point (`envscaler_mcp.cli.main`) in process; one case runs it as a process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp import __version__
from envscaler_mcp.cli import main

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"
NO_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_BASE_URL", "OPENAI_COMPATIBLE_API_KEY")


def run_main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    code = exit_info.value.code
    return (code if isinstance(code, int) else 1), out, err


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", "--env", str(MINI_SHOP), "--no-progress", "--out", str(tmp_path / "run"), *extra]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--agent", "gpt4"], "unknown provider 'gpt4'"),
        (["--agent", "foo/bar"], "unknown provider 'foo'"),
        (["--agent", "openai/gpt-4o"], "OPENAI_API_KEY"),
        (["--agent", "anthropic/claude-x"], "ANTHROPIC_API_KEY"),
        (["--agent", "openai-compatible/x"], "--agent-base-url"),
        (["--agent", "oracle", "--user", "gpt4"], "unknown provider 'gpt4'"),
        (["--agent", "oracle", "--concurrency", "0"], "--concurrency"),
        (["--agent", "oracle", "--trials", "-1"], "--trials"),
        (["--agent", "oracle", "--limit", "0"], "--limit"),
        (["--agent", "oracle", "--max-steps", "0"], "--max-steps"),
        (["--agent", "oracle", "--timeout", "0"], "--timeout"),
        (["--agent", "oracle", "--transport", "pigeon"], "--transport"),
        (["--agent", "oracle", "--success", "maybe"], "--success"),
        (["--agent", "oracle", "--scenario-ids", "no-such-id"], "--scenario-ids: no scenario 'no-such-id'"),
    ],
)
def test_bad_eval_input_is_one_line_exit_2_and_starts_nothing(
    extra: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in NO_KEYS:
        monkeypatch.delenv(var, raising=False)
    code, out, err = run_main(eval_args(tmp_path, *extra), capsys)
    assert code == 2, (out, err)
    assert says in err
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()  # refused before the run folder, and so before any server


def test_unknown_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(["eval", "--env", "no_such_env", "--agent", "oracle", "--out", str(tmp_path / "r")],
                              capsys)
    assert code == 2 and "unknown environment 'no_such_env'" in err and "Traceback" not in out + err


def test_malformed_scenario_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    code, out, err = run_main(eval_args(tmp_path, "--agent", "oracle", "--scenarios", str(bad)), capsys)
    assert code == 2 and str(bad) in err and "Traceback" not in out + err
    assert not (tmp_path / "run").exists()


def test_out_path_that_cannot_be_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--out", str(blocker / "run")]
    code, out, err = run_main(args, capsys)
    assert code == 2 and "--out" in err and "Traceback" not in out + err
    assert blocker.read_text() == "x"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["no-such-command"], "No such command"),
        (["eval", "--bogus"], "--bogus"),
        (["show", "no_such_env"], "no_such_env"),
        (["install", "library_loans", "--client", "notepad"], "--client"),
        (["report", "/no/such/run"], "/no/such/run"),
        (["serve", "library_loans", "--http", "--port", "99999"], "--port"),
        (["scenarios", "check", "library_loans", "--workers", "0"], "--workers"),
        (["scenarios", "check", "library_loans", "--concurrency", "0"], "--concurrency"),
    ],
)
def test_other_usage_errors(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(args, capsys)
    assert code == 2 and says in err and "Traceback" not in out + err


def test_no_arguments_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main([], capsys)
    assert code == 2 and "Commands" in out + err and "eval" in out + err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(["--version"], capsys)
    assert code == 0 and out.strip() == __version__


def test_the_installed_entry_point_too(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "envscaler_mcp", "eval", "--env", str(MINI_SHOP), "--agent", "oracle",
         "--concurrency", "0", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 2
    assert "--concurrency" in result.stderr and "Traceback" not in result.stdout + result.stderr


def test_serve_refuses_a_malformed_state_file_before_starting(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    bad = tmp_path / "state.json"
    bad.write_text("{oops")
    code, out, err = run_main(["serve", "library_loans", "--state", str(bad)], capsys)
    assert code == 2 and str(bad) in err and "Traceback" not in out + err
    assert "serving" not in err  # refused before the server was started
