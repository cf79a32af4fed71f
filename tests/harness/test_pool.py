"""A run's server that crashes is restarted, and the episode's infra retry runs on the new one."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.server_zygote import _Shared
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import shop_server
from tests.security.test_server_attacks import FIXTURE, malicious_server

pytestmark = pytest.mark.anyio


class _CrashingServer:
    """Fault injection around a real server: the first cancel_order call kills it; from then on every
    episode fails to open (connection refused), as with a crashed HTTP server."""

    has_admin = True

    def __init__(self, server: Any) -> None:
        self.server, self.dead = server, False

    @asynccontextmanager
    async def episode(self, initial_state: dict[str, Any] | None = None) -> AsyncIterator[Any]:
        if self.dead:
            raise ConnectionRefusedError("connection refused")
        async with self.server.episode(initial_state) as ep:
            yield _Ep(self, ep)


class _Ep:
    def __init__(self, owner: _CrashingServer, ep: Any) -> None:
        self.owner, self.ep = owner, ep

    async def list_tools(self) -> Any:
        return await self.ep.list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        if name == "cancel_order":
            self.owner.dead = True
            raise ConnectionResetError("connection reset by peer")
        return await self.ep.call_tool(name, arguments)  # type: ignore[no-any-return]

    async def get_state(self) -> Any:
        return await self.ep.get_state()


async def test_a_crashed_server_is_restarted_and_the_run_completes(tmp_path: Path) -> None:
    started: list[str] = []

    @asynccontextmanager
    async def factory(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        started.append(plan.env_id)
        async with shop_server("memory") as server:
            yield _CrashingServer(server) if len(started) == 1 else server

    config = RunConfig.model_validate(
        {
            "envs": ["tests/fixtures/mini_shop"],
            "agent": "oracle",
            "transport": "memory",
            "concurrency": 1,
            "progress": False,
            "episode": {"infra_retries": 2, "infra_backoff_s": 0},
        }
    )
    summary = finish_run((await run_eval(config, tmp_path, agent=Seat.oracle(), source_factory=factory)).path)
    records = RunDir(tmp_path).read_results()
    assert started == ["mini_shop", "mini_shop"]
    assert summary.overall.infra_errors == 0 and summary.overall.success_rate == 1.0
    assert sorted(r.attempts for r in records) == [1, 2]  # the crash restarts the server at once; the retry succeeds


def _server_children(flag: bytes) -> list[int]:
    """PIDs of this test process's own server processes started with `flag` (--http; --state-dir: the pipe,
    whose server also has one), or forked for it by its server zygote (only one server runs at a time here). Where the launched process only waits for the server it forked into a PID
    namespace of its own (isolation/confine_server.py), that server is the one named."""
    table: dict[int, tuple[int, list[bytes]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            table[int(stat.parent.name)] = (int(fields[1]), (stat.parent / "cmdline").read_bytes().split(b"\0"))
        except (OSError, ValueError):
            continue

    def wanted(cmdline: list[bytes]) -> bool:
        return flag in cmdline and (flag == b"--http" or b"--http" not in cmdline)

    zygote = _Shared.zygote.pid if _Shared.zygote is not None else None  # servers forked from the server zygote
    pids = []                                                           # carry its command line, not their own
    for pid, (parent, cmdline) in table.items():
        if b"envscaler_mcp.isolation.zygote_template" in cmdline:
            continue  # the server zygote's other child: it forks episode zygotes, never a server
        if (parent == os.getpid() and wanted(cmdline)) or (zygote is not None and parent == zygote):
            inner = [p for p, (pp, cl) in table.items() if pp == pid and (wanted(cl) or parent == zygote)]
            pids += inner or [pid]
    return pids


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the server's process through /proc")
@pytest.mark.parametrize(("transport", "flag"), [("http", b"--http"), ("pipe", b"--state-dir")])
async def test_a_killed_shared_server_is_restarted(tmp_path: Path, transport: str, flag: bytes) -> None:
    killed: list[int] = []

    def agent(scenario: Scenario) -> Any:
        if len(created) == 2 and not killed:  # kill the shared server while the third episode starts
            killed.extend(_server_children(flag))
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
        created.append(scenario.id)
        return OraclePolicy(scenario)

    created: list[str] = []
    config = RunConfig.model_validate(
        {
            "envs": ["tests/fixtures/mini_shop"],
            "agent": "oracle",
            "transport": transport,
            "trials": 3,
            "concurrency": 1,
            "progress": False,
            "episode": {"infra_retries": 2, "infra_backoff_s": 0},
        }
    )
    summary = finish_run((await run_eval(config, tmp_path, agent=Seat("oracle", factory=agent))).path)
    records = RunDir(tmp_path).read_results()
    assert len(killed) == 1 and summary.overall.episodes == 6
    assert summary.overall.infra_errors == 0 and summary.overall.success_rate == 1.0
    assert max(r.attempts for r in records) > 1


_DIES_IN_ADD_NOTE = """
import os as _os
_add_note = MiniShop.add_note
def _add_note_then_die(self, *args, **kwargs):
    _add_note(self, *args, **kwargs)  # the call has run; the server ends before it answers
    _os._exit(3)
MiniShop.add_note = _add_note_then_die
"""


async def test_a_server_that_dies_mid_call_over_http_costs_that_episode_alone(tmp_path: Path) -> None:
    """The HTTP client never sends a call again once its bytes are out (the server may have run it), and the
    call's failure is that episode's infra error: the shared MCP client, the server's other episodes and the
    run go on (before, the failed POST ended the shared client and the run stopped with an internal error)."""
    server_dir = malicious_server(tmp_path, tmp_path, 0, code=_DIES_IN_ADD_NOTE)

    @asynccontextmanager
    async def factory(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with launch_server(server_dir, transport="http", episode_process="shared") as server:
            yield server

    config = RunConfig.model_validate(
        {
            "envs": ["tests/fixtures/mini_shop"],
            "agent": "oracle",
            "transport": "http",
            "concurrency": 1,
            "progress": False,
            "episode": {"infra_retries": 1, "infra_backoff_s": 0},
        }
    )
    summary = finish_run((await run_eval(config, tmp_path / "run", agent=Seat.oracle(), source_factory=factory)).path)
    records = {r.scenario_id: r for r in RunDir(tmp_path / "run").read_results()}
    noted = {s.id for s in load_scenarios(FIXTURE / "scenarios.jsonl")
             if any(call.tool == "add_note" for call in s.reference_solution)}
    assert noted and noted != set(records)
    for scenario_id, record in records.items():
        if scenario_id in noted:
            assert record.status == "infra_error" and "not sent again" in (record.infra_reason or "")
        else:
            assert record.status == "completed" and record.success
    assert summary.overall.infra_errors == len(noted)
