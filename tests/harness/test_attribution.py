"""Who is charged for a failure: the model's own faults are scored, infrastructure faults are retried and left
out, and a bug in the harness stops the run with its traceback kept (never hidden as infra)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.errors import HarnessError, ProviderNotConfigured, ProviderUnavailable, ServerStartError
from envscaler_mcp.harness import run as harness_run
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.faults import describe
from envscaler_mcp.harness.models import CheckOutcome, EpisodeConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import ERROR_LOG, RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers import get_provider
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import ALICE, BOB, ENV_INFO, MINI_SHOP, CrashingSource, shop_server
from tests.harness.test_pool import _server_children

pytestmark = pytest.mark.anyio

# Answers shaped like OpenAI's documented chat.completion and error bodies (hand-written).
_CANCEL = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "cancel_order", "arguments": '{"order_id": "O-1002"}'}}]}}],
    "usage": {"prompt_tokens": 500, "completion_tokens": 20, "total_tokens": 520},
}
_OVERFLOW = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                                  "resulted in 128410 tokens.", "type": "invalid_request_error",
                       "code": "context_length_exceeded"}}


def _openai_agent(answers: list[tuple[int, dict[str, Any]]]) -> Any:
    def handle(request: httpx2.Request) -> httpx2.Response:
        status, body = answers.pop(0)
        return httpx2.Response(status, json=body)

    client = openai.AsyncOpenAI(api_key="test-key", max_retries=0,
                                http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handle)))
    return get_provider("openai/gpt-4.1", client=client, retries=0)


async def test_a_context_overflow_is_the_models_failure_and_the_state_is_still_scored(
    server: Any, checker: SandboxChecker
) -> None:
    agent = _openai_agent([(200, _CANCEL), (400, _OVERFLOW)])
    result = await run_episode(BOB, source=server, agent=agent, checker=checker, env_info=ENV_INFO)
    assert result.status == "model_error" and result.attempts == 1 and result.infra_reason is None
    assert (result.model_error or "").startswith("context_overflow:")
    # The cancellation the agent made before overflowing counts; the missing note fails; never a success.
    assert result.score == 0.5 and result.success is False
    assert [c.status for c in result.checks] == ["pass", "fail"]


class _BuggyChecker:
    """A checker with a bug that shows when it checks a second final state (a KeyError in harness code); the
    checks of the untouched initial state that every episode also runs are passed through uncounted."""

    def __init__(self, real: SandboxChecker) -> None:
        self.real, self.calls = real, 0

    async def check(self, items: Any, initial_state: Any, final_state: Any, transcript: Any = None
                    ) -> list[CheckOutcome]:
        if final_state is initial_state:
            return await self.real.check(items, initial_state, final_state, transcript)
        self.calls += 1
        if self.calls == 2:
            raise KeyError("orders")
        return await self.real.check(items, initial_state, final_state, transcript)


def _config(**episode: Any) -> RunConfig:
    return RunConfig.model_validate({
        "envs": ["tests/fixtures/mini_shop"], "agent": "oracle", "transport": "memory", "concurrency": 1,
        "progress": False, "episode": {"infra_retries": 2, "infra_backoff_s": 0, **episode},
    })


async def test_a_harness_bug_stops_the_run_keeps_what_finished_and_logs_the_traceback(
    tmp_path: Path, checker: SandboxChecker
) -> None:
    buggy = _BuggyChecker(checker)
    with pytest.raises(HarnessError, match="internal error in the harness \\(KeyError: 'orders'\\)"):
        await run_eval(_config(), tmp_path, agent=Seat.oracle(), checker=buggy)  # type: ignore[arg-type]
    assert buggy.calls == 2  # not retried as if it were infrastructure
    records = RunDir(tmp_path).read_results()
    assert [r.status for r in records] == ["completed"]  # the finished episode is kept, nothing is infra
    log = (tmp_path / ERROR_LOG).read_text()
    assert "Traceback" in log and 'raise KeyError("orders")' in log and "test_attribution.py" in log


def test_the_eval_command_reports_a_harness_bug_in_one_line_and_keeps_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = harness_run.run_episode
    calls: list[int] = []

    async def buggy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyError("orders")
        return await real(*args, **kwargs)

    monkeypatch.setattr(harness_run, "run_episode", buggy)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport",
                                      "memory", "--concurrency", "1", "--out", str(out), "--no-progress"])
    assert isinstance(result.exception, HarnessError) and "Traceback" not in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["episodes"] == 1 and summary["overall"]["infra_errors"] == 0
    assert "KeyError: 'orders'" in (out / ERROR_LOG).read_text()


async def test_a_server_that_cannot_be_restarted_fails_only_its_own_episodes(tmp_path: Path) -> None:
    starts: list[str] = []

    @asynccontextmanager
    async def factory(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        starts.append(plan.env_id)
        if len(starts) > 1:
            raise ServerStartError("the HTTP server exited with code 1 before it was ready")
        async with shop_server("memory") as server:
            yield CrashingSource(server, crash_on="add_note")  # Bob's second call crashes the server

    config = _config().model_copy(update={"trials": 2})
    await run_eval(config, tmp_path, agent=Seat.oracle(), source_factory=factory)
    summary = finish_run(tmp_path)
    records = RunDir(tmp_path).read_results()
    assert len(records) == 4 and len({(r.scenario_id, r.trial) for r in records}) == 4
    infra = [r for r in records if r.status == "infra_error"]
    assert infra and all("could not be restarted" in (r.infra_reason or "") for r in infra)
    assert all(r.score is None for r in infra)
    assert summary.overall.infra_errors == len(infra) and (tmp_path / "summary.json").exists()


def _process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server's process through /proc")
async def test_a_stopped_http_server_is_infra_twice_in_a_row_and_never_charged_to_the_model(
    tmp_path: Path,
) -> None:
    stopped: list[int] = []
    opened: list[str] = []

    def agent(scenario: Scenario) -> Any:
        opened.append(scenario.id)
        if len(opened) in (2, 3):  # stop (SIGSTOP) the shared server as the 2nd and again as the 3rd episode start
            for pid in _server_children(b"--http"):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        return OraclePolicy(scenario)

    config = RunConfig.model_validate({
        "envs": ["tests/fixtures/mini_shop"], "agent": "oracle", "transport": "http", "trials": 2,
        "concurrency": 1, "progress": False,
        "episode": {"infra_retries": 2, "infra_backoff_s": 0, "server_timeout_s": 2.0},
    })
    await run_eval(config, tmp_path, agent=Seat("oracle", factory=agent))
    summary = finish_run(tmp_path)
    records = RunDir(tmp_path).read_results()
    assert len(set(stopped)) == 2  # two different server processes were stopped
    assert len(records) == 4 and len({(r.scenario_id, r.trial) for r in records}) == 4
    assert summary.overall.infra_errors == 0 and summary.overall.success_rate == 1.0
    # Each stopped server hangs its episode's first attempt (infra); the retry runs on a restarted server.
    assert all(r.status == "completed" for r in records) and [r.attempts for r in records] == [1, 2, 2, 1]
    assert all(_process_state(pid) in (None, "Z") for pid in stopped)  # the stopped servers are gone


async def test_a_timeout_inside_a_hung_tool_call_is_infra_not_the_agents_timeout(
    server: Any, checker: SandboxChecker
) -> None:
    class _Hanging:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        @asynccontextmanager
        async def episode(self, initial_state: Any = None) -> AsyncIterator[Any]:
            async with self.inner.episode(initial_state) as ep:
                yield _HangingEp(ep)

    class _HangingEp:
        def __init__(self, ep: Any) -> None:
            self.ep = ep

        async def list_tools(self) -> Any:
            return await self.ep.list_tools()

        async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
            import anyio

            await anyio.sleep_forever()

        async def get_state(self) -> Any:
            return await self.ep.get_state()

    config = EpisodeConfig(timeout_s=0.5, server_timeout_s=30.0, infra_retries=1, infra_backoff_s=0)
    result = await run_episode(ALICE, source=_Hanging(server), agent=OraclePolicy(ALICE),
                               checker=checker, config=config)
    assert result.status == "infra_error" and result.score is None and result.attempts == 2
    assert "did not answer a tool call" in (result.infra_reason or "")


async def test_a_provider_down_is_retried_and_a_provider_not_set_up_stops_at_once(
    server: Any, checker: SandboxChecker
) -> None:
    config = EpisodeConfig(infra_retries=1, infra_backoff_s=0)

    def down(*_: Any) -> Any:
        raise ProviderUnavailable("openai: 503 Service Unavailable after 3 retries")

    def not_set_up(*_: Any) -> Any:
        raise ProviderNotConfigured("OPENAI_API_KEY is not set")

    unavailable = MockProvider([down], repeat_last=True)
    result = await run_episode(BOB, source=server, agent=unavailable, checker=checker, config=config)
    assert result.status == "infra_error" and result.score is None and result.success is None
    assert result.attempts == 2 and len(unavailable.requests) == 2  # a fresh episode, then left out of the scores
    assert "ProviderUnavailable: openai: 503" in (result.infra_reason or "")
    unconfigured = MockProvider([not_set_up], repeat_last=True)
    with pytest.raises(BaseException) as raised:  # the error itself, or a task group's with it as its one leaf
        await run_episode(BOB, source=server, agent=unconfigured, checker=checker, config=config)
    assert describe(raised.value) == "ProviderNotConfigured: OPENAI_API_KEY is not set"
    assert len(unconfigured.requests) == 1  # not retried: a setup problem stops the run
