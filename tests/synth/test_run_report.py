"""What `synth scenarios` and `synth envs` say about a run: progress on the terminal and in the log, a non-zero
exit with the drops counted when nothing was kept, only files that exist, an unwritable --out refused before
any model starts, and Ctrl-C / SIGTERM ending with what was kept and how to resume (real subprocesses)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

import envscaler_mcp.providers as providers
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers.base import AssistantTurn, Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog, current_step, item_scope
from envscaler_mcp.synth._common_report import count_reasons
from tests.synth.fixtures.scen_router import ScenRouter
from tests.synth.fixtures.skel_router import SkelRouter

ROOT = Path(__file__).resolve().parents[2]
SKELETON = ROOT / "tests" / "fixtures" / "mini_shop" / "skeleton.json"
CORPUS = ROOT / "tests" / "synth" / "fixtures" / "skel_corpus.jsonl"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def scen_args(out: Path, *more: str) -> list[str]:
    return ["synth", "scenarios", str(SKELETON), "--model", "mock/gen", "--out", str(out), *more]


@pytest.fixture
def specs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every provider made (the fixture router for `scenarios`, case from SCEN_CASE)."""
    made: list[str] = []

    def fake_get_provider(spec: str, **_: object) -> MockProvider:
        made.append(spec)
        router = ScenRouter("mini_shop", os.environ.get("SCEN_CASE", "good")) if spec.startswith("mock/") \
            else SkelRouter()
        return MockProvider([router], repeat_last=True, spec=spec)

    monkeypatch.setattr(providers, "get_provider", fake_get_provider, raising=False)
    return made


def test_a_kept_scenario_is_named_with_its_file_and_logged(tmp_path: Path, specs: list[str]) -> None:
    out = tmp_path / "sets"
    result = CliRunner().invoke(app, scen_args(out, "-n", "1"))
    assert result.exit_code == 0, result.output
    assert f"scenarios added to: {out / 'mini_shop.jsonl'} (+1)" in result.output
    assert "<env>" not in result.output
    log = (out / "_work" / "synth.log").read_text()
    assert "[scenarios] 1 item(s) to make" in log
    assert "s001 states: answered (" in log and "s001 solution: answered (" in log  # a line per call and step
    assert "[scenarios 1/1] mini_shop/s001: passed the gate" in log
    assert "[scenarios 1/1] mini_shop/s001: passed the gate" in result.output  # the same lines on the terminal


def test_nothing_kept_fails_with_the_drops_counted(tmp_path: Path, specs: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCEN_CASE", "bad_state_twice")  # the state is refused twice: every item dropped at stage 1
    out = tmp_path / "sets"
    result = CliRunner().invoke(app, scen_args(out, "-n", "2"))
    assert result.exit_code == 1, result.output
    assert "error: no scenario kept; 2 item(s) dropped:" in result.output
    assert "  states: 2 × " in result.output  # counted by step and reason
    assert not (out / "mini_shop.jsonl").exists()
    assert "mini_shop.jsonl" not in result.output and "<env>" not in result.output  # no file that was not written
    assert f"dropped items: {out / '_work' / 'mini_shop' / 'dropped.jsonl'}" in result.output
    assert "error: no scenario kept" in (out / "_work" / "synth.log").read_text()


def test_count_reasons_groups_reasons_of_one_shape() -> None:
    lines = count_reasons([("states", "prompt of 12291 tokens exceeds 8192"), ("states", "prompt of 9000 tokens "
                           "exceeds 8192"), ("gate", "validator 'c1' crashed"), ("states", "no JSON object")])
    assert lines == ["states: 2 × prompt of 12291 tokens exceeds 8192", "gate: 1 × validator 'c1' crashed",
                     "states: 1 × no JSON object"]


@pytest.mark.parametrize("command", ["scenarios", "envs"])
def test_an_unwritable_out_is_refused_before_any_model(tmp_path: Path, specs: list[str], command: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = blocker / "sets"
    args = scen_args(out, "-n", "1") if command == "scenarios" else \
        ["synth", "envs", "--tasks", str(CORPUS), "--model", "mock/gen", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, UsageError)  # the CLI's one-line error, exit 2
    assert str(result.exception) == f"--out {out}: cannot create the output folder ({blocker} is not a writable " \
                                    "folder)"
    assert specs == []  # no provider was made, no model started
    done = subprocess.run([sys.executable, "-m", "tests.synth.fixtures.synth_cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {result.exception}"]


def test_envs_that_keep_nothing_fail_with_the_reasons(tmp_path: Path, specs: list[str]) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["synth", "envs", "--tasks", str(CORPUS), "--model", "skel/gen", "--out",
                                      str(out), "--stage", "mine", "--limit", "3", "--min-usefulness", "10",
                                      "--min-modelability", "10"])
    assert result.exit_code == 1, result.output
    assert "error: the mine stage kept nothing; 3 item(s) dropped:" in result.output
    assert "mine (selection): 3 × usefulness or modelability below" in result.output
    assert "environments:" not in result.output  # no folder was written


def _run_until(tmp_path: Path, args: list[str], hang_item: str, ready: str, log: Path,
               sig: signal.Signals) -> subprocess.CompletedProcess[str]:
    """Start the command, wait until the log shows `ready`, send `sig`, and collect what it printed."""
    env = {**os.environ, "SYNTH_HANG_ITEM": hang_item, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.synth.fixtures.synth_cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 180
    try:
        while not (log.exists() and ready in log.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"never saw {ready!r}"
            time.sleep(0.2)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_scenarios_interrupted_say_what_is_kept_and_how_to_resume(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "sets"
    args = scen_args(out, "-n", "2", "--concurrency", "1")
    done = _run_until(tmp_path, args, "s002", "s002 states: asking", out / "_work" / "synth.log", sig)
    assert done.returncode == 130, done.stderr
    lines = done.stderr.splitlines()
    assert "interrupted: 1 scenario(s) passed the gate and 0 item(s) were dropped, of 2; kept in " \
           f"{out / '_work'} (a resumed run adds them to the sets)" in lines
    assert f"resume: envscaler-mcp {' '.join(args)} --resume" in lines
    assert (out / "_work" / "mini_shop" / "items" / "s001.json").exists()  # the finished item is on disk
    assert not (out / "_work" / "mini_shop" / "items" / "s002.json").exists()
    assert "Traceback" not in done.stderr


def test_envs_interrupted_say_what_is_kept_and_how_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["synth", "envs", "--tasks", str(CORPUS), "--model", "mock/gen", "--out", str(out), "--stage", "mine",
            "--limit", "3", "--concurrency", "1"]
    hang = "ba477fae71ed"  # the corpus's second task after the filters
    done = _run_until(tmp_path, args, hang, f"{hang} skel/judge: asking", out / "synth.log", signal.SIGTERM)
    assert done.returncode == 130, done.stderr
    lines = done.stderr.splitlines()
    assert f"interrupted: 1 task(s) judged, 0 environment(s) modelled, 0 kept by the check; kept in {out}" in lines
    assert f"resume: envscaler-mcp {' '.join(args)} --resume" in lines
    assert "Traceback" not in done.stderr


class _Slow(MockProvider):
    """Answers once `release` is set."""

    def __init__(self) -> None:
        super().__init__(["done"], spec="mock/slow")
        self.release = asyncio.Event()

    async def complete(self, *args: Any, **kwargs: Any) -> AssistantTurn:
        await self.release.wait()
        return await super().complete(*args, **kwargs)


@pytest.mark.anyio
async def test_a_long_call_says_it_is_still_waiting(tmp_path: Path) -> None:
    lines: list[str] = []
    log = RunLog(tmp_path / "synth.log", echo=lines.append)
    slow = _Slow()
    provider = ReportingProvider(slow, log, heartbeat_s=0.05)
    with item_scope("s003"):
        current_step.set("task")
        started = time.monotonic()
        call = asyncio.ensure_future(provider.complete([Message(role="user", content="hi")]))
        while not any("still waiting" in line for line in lines):
            await asyncio.sleep(0.02)
        waited = time.monotonic() - started
        assert not call.done()
        slow.release.set()
        turn = await call
    assert turn.message.content == "done"
    # The time since the call began, at most what this test waited for the line (the first beat is due after
    # 0.05 s, but a loaded machine may wake it late: "0s" was too strict).
    shown = re.match(r"  s003 task: still waiting \((\d+)s", lines[1])
    assert lines[0] == "  s003 task: asking mock/slow" and shown and int(shown[1]) <= round(waited), (lines, waited)
    assert lines[-1].startswith("  s003 task: answered (")
    assert (tmp_path / "synth.log").read_text().count("still waiting") == sum("still waiting" in x for x in lines)


@pytest.mark.anyio
async def test_a_cancelled_call_is_cancelled_with_its_caller(tmp_path: Path) -> None:
    slow = _Slow()
    provider = ReportingProvider(slow, RunLog(tmp_path / "synth.log", echo=lambda _: None), heartbeat_s=0.05)
    with anyio.move_on_after(0.2):
        await provider.complete([Message(role="user", content="hi")])
    slow.release.set()
    await asyncio.sleep(0.05)
    assert slow.requests == []  # the inner call never went on to answer after its caller gave up
