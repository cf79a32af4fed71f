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
        (["scenarios", "check", "library_loans", "--validator-workers", "0"], "--validator-workers"),
        (["eval", "--env", "library_loans", "--agent", "oracle", "--workers", "x"], "--workers"),
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


@pytest.mark.parametrize("command", [
    ["show", "{f}"], ["render", "{f}", "--out", "{tmp}/out"], ["scenarios", "check", "{f}"],
    ["eval", "--env", "{f}", "--agent", "oracle", "--out", "{tmp}/run", "--no-progress"],
    ["scenarios", "check", str(MINI_SHOP / "skeleton.json"), "--scenarios", "{f}"],
    ["synth", "scenarios", "{f}", "--model", "mock", "-n", "1", "--out", "{tmp}/synth"],
])
def test_a_file_that_is_not_utf8_text_is_named_in_one_line(command: list[str], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    args = [a.format(f=binary, tmp=tmp_path) for a in command]
    code, out, err = run_main(args, capsys)
    assert code == 2 and "Traceback" not in out + err, (out, err)
    assert err.strip() == f"error: {binary}: not UTF-8 text (byte 0xff at position 0): is it the right file?"


def test_a_skeleton_id_that_is_not_snake_case_is_refused_by_every_reader(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    skeleton = json.loads((MINI_SHOP / "skeleton.json").read_text())
    escape = tmp_path / "skeleton.json"
    escape.write_text(json.dumps({**skeleton, "id": "../escape"}))
    home = tmp_path / "home"
    home.mkdir()
    for args in (["show", str(escape)], ["catalog", "add", str(escape), "--home", str(home)]):
        code, out, err = run_main(args, capsys)
        assert code == 2 and "Traceback" not in out + err and "field 'id'" in err, (args, out, err)
    assert list(home.iterdir()) == []


def test_a_results_file_of_the_wrong_shape_is_named_with_its_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    code, out, err = run_main(eval_args(tmp_path, "--agent", "oracle", "--transport", "memory", "--limit", "1"), capsys)
    assert code == 0, (out, err)
    kept = (run / "results.jsonl").read_text()
    (run / "results.jsonl").write_text('{"foo": 1}\n')
    for args in (["report", str(run)], ["export", "run", str(run), "--format", "openai", "--out", str(tmp_path / "x")]):
        code, out, err = run_main(args, capsys)
        assert code == 2 and "Traceback" not in out + err, (args, out, err)
        assert f"{run / 'results.jsonl'}: line 1: not a valid EpisodeResult" in err
    # a whole last line that is not JSON is not a write cut short (that has no newline): it is named, never
    # read as no episodes; a torn tail after it is still ignored
    for text, says in ((kept + "garbage\n", "line 2 is not valid JSON"), ("garbage\n", "line 1 is not valid JSON")):
        (run / "results.jsonl").write_text(text)
        code, out, err = run_main(["report", str(run)], capsys)
        assert code == 2 and says in err and "Traceback" not in out + err, (text, out, err)
    (run / "results.jsonl").write_text(kept + '{"run_id": "to')
    code, out, err = run_main(["report", str(run)], capsys)
    assert code == 0, (out, err)
    assert not (tmp_path / "x").exists()


def test_serve_on_a_port_in_use_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, _out, err = run_main(["serve", "library_loans", "--http", "--port", str(port)], capsys)
    assert code == 2 and err.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_the_server_itself_says_in_one_line_that_it_cannot_listen(tmp_path: Path) -> None:
    server = Path(__file__).resolve().parents[2] / "generated_servers" / "library_loans"
    result = subprocess.run([sys.executable, "-m", "library_loans_mcp", "--http", "--host", "nosuch.invalid",
                             "--port", "0"], cwd=server, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot listen on nosuch.invalid:0: ")


def test_an_error_inside_concurrent_work_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The scripted provider has no answers: the first call fails inside the pipeline's task group.
    code, out, err = run_main(["synth", "scenarios", str(MINI_SHOP / "skeleton.json"), "--model", "mock", "-n", "1",
                               "--out", str(tmp_path / "out")], capsys)
    assert "Traceback" not in out + err and code == 1, (out, err)
    lines = err.strip().splitlines()  # progress lines come first (synth reports each step on stderr)
    assert [line for line in lines if line.startswith("error")] == lines[-1:] == [
        "error: mock provider: script has 0 turns, call 1 asked for more"]


def test_install_refuses_a_scenario_the_server_does_not_bundle(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    args = ["install", "library_loans", "--client", "cursor", "--config", str(config), "--scenario", "nope"]
    code, _out, err = run_main(args, capsys)
    assert code == 2 and err.startswith("error: --scenario: the server bundles no scenario 'nope' (sc-")
    assert not config.exists()  # nothing written


def test_render_checks_every_name_before_writing_anything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "servers"
    code, _, err = run_main(["render", "library_loans", "nope_env", "--out", str(out)], capsys)
    assert code == 2 and "unknown environment 'nope_env'" in err
    assert not out.exists()


def test_import_checks_the_trajectory_file_before_writing_anything(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    es = Path(__file__).resolve().parents[1] / "fixtures" / "envscaler"
    out = tmp_path / "imported"
    code, _, err = run_main(["import", "envscaler", "--envs", str(es / "env_metadata.json"), "--scenarios",
                             str(es / "scenario_metadata.json"), "--trajectories", str(tmp_path / "none.jsonl"),
                             "--out", str(out)], capsys)
    assert code == 2 and err.strip() == f"error: {tmp_path / 'none.jsonl'}: file not found"
    assert not out.exists()


def test_synth_envs_on_a_corpus_without_tasks_says_so_and_writes_nothing(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text("[1, 2, 3]")
    out = tmp_path / "out"
    code, _, err = run_main(["synth", "envs", "--model", "mock", "--tasks", str(corpus), "--out", str(out)], capsys)
    assert code == 2 and err.startswith(f"error: {corpus}: no usable task in the corpus (records 3, no-query 3)")
    assert not (out / "mine").exists()


def test_an_output_path_that_cannot_be_written_is_named_not_its_temporary_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(eval_args(tmp_path, "--agent", "oracle", "--transport", "memory", "--limit", "1"), capsys)
    assert code == 0, (out, err)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    code, out, err = run_main(["report", str(tmp_path / "run"), "--out", str(folder)], capsys)
    assert code == 2 and err.strip() == f"error: {folder}: Is a directory", err
    assert list(folder.iterdir()) == []  # no temporary file left either


@pytest.mark.parametrize(("extra", "says"), [
    (["--url", "notaurl"], "error: --url: 'notaurl' is not an http(s) URL"),
    (["--url", "ftp://host/mcp"], "error: --url: 'ftp://host/mcp' is not an http(s) URL"),
    (["--server", "/nonexistent/bin/serverx --stdio"], "error: --server: '/nonexistent/bin/serverx' is not a program"),
    (["--server", "'unclosed"], "error: --server: ''unclosed' is not a command line"),
])
def test_an_external_server_that_cannot_be_reached_is_refused_before_the_run(
        extra: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(eval_args(tmp_path, "--agent", "oracle", *extra), capsys)
    assert code == 2 and err.startswith(says) and "Traceback" not in out + err, (out, err)
    assert not (tmp_path / "run").exists()


def test_scenarios_of_another_environment_are_not_checked_on_the_one_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    line = json.loads((MINI_SHOP / "scenarios.jsonl").read_text().splitlines()[0])
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**line, "env_id": "nope_env"}) + "\n")
    code, out, err = run_main(["scenarios", "check", str(MINI_SHOP / "skeleton.json"), "--scenarios", str(other)],
                              capsys)
    assert code == 2 and "scenarios of nope_env cannot be checked on mini_shop" in err, (out, err)
    assert "passed the gate" not in out


def test_serve_with_both_a_state_and_a_scenario_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.json"
    state.write_text("{}")
    code, _, err = run_main(["serve", "library_loans", "--state", str(state), "--scenario", "x"], capsys)
    assert code == 2 and err.strip() == "error: --state and --scenario both say where the server starts: give one of them"
    assert "serving" not in err


def test_a_skeleton_whose_class_does_not_compile_is_bad_input(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The skeleton's fault, not the tool's: exit 2 like any other bad input, and nothing rendered."""
    import json

    skeleton = json.loads((MINI_SHOP / "skeleton.json").read_text())
    broken = tmp_path / "skeleton.json"
    broken.write_text(json.dumps({**skeleton, "class_source": skeleton["class_source"] + "\ndef (:\n"}))
    for args in (["render", str(broken), "--out", str(tmp_path / "out")], ["serve", str(broken)]):
        code, out, err = run_main(args, capsys)
        assert code == 2 and "Traceback" not in out + err and "class source does not compile" in err, (args, err)
    assert not (tmp_path / "out").exists()
