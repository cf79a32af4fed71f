"""Episode zygotes forked by the zygote template (isolation/zygote_template.py) into their server's namespaces.

The template is a process outside every server: it joins a server's namespaces through the server's pidfd and
forks the zygote there. Shown by effect, from outside: the zygote is in its server's PID, network, IPC and mount
namespaces (the template is in none of them), runs as its server's user with its server's limits, and ends with
its server, episodes included, when the server is killed outright; no process of a server holds a descriptor of
the template's channel or of the server zygote's; and with the template gone, servers spawn their zygotes as
before and their episodes still run.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.server_zygote import ZYGOTE_ENV, _Shared
from tests.security.test_episode_processes import (
    STARTUP_S,
    _as_nobody,
    _initial,
    _processes_of,
    _status,
    _zygote_of,
)
from tests.security.test_server_attacks import malicious_server

pytestmark = pytest.mark.anyio

NAMESPACES = ("pid", "net", "ipc", "mnt")
LIMITS = ("Max address space", "Max cpu time", "Max processes", "Max core file size", "Max open files")


@pytest.fixture(autouse=True)
def zygote_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ZYGOTE_ENV, raising=False)


def _ns(pid: int) -> dict[str, str] | None:
    """The namespaces of `pid`; None where this user may not read them (a normal user: non-dumpable processes)."""
    try:
        return {kind: os.readlink(f"/proc/{pid}/ns/{kind}") for kind in NAMESPACES}
    except PermissionError:
        return None


def _limits(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/limits").read_text().splitlines()
    return {name: " ".join(line[len(name):].split()[:2]) for line in lines for name in LIMITS if line.startswith(name)}


def _children(pid: int) -> list[int]:
    """The children of every thread of `pid` (the zygote forks each episode from a thread of its own)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _template() -> int:
    """This process's zygote template: its server zygote's child that runs zygote_template.py."""
    assert _Shared.zygote is not None, _Shared.failed
    [template] = [pid for pid in _children(_Shared.zygote.pid) if b"isolation.zygote_template" in _cmdline(pid)]
    return template


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:"):
            found.add(target)
    return found


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.append(pid)
        except OSError:
            continue
    return alive


def _cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


async def killed_run(folder: Path, transport: str) -> dict[str, Any]:
    """A fork server of `folder` with one episode open: what /proc shows of its zygote, its server and the
    template, then the server killed outright (SIGKILL: no close, no channel shut) and what is left of the zygote
    and its episodes 15 s later. Also run as a normal user (tests/security/episode_probe.py)."""
    seen: dict[str, Any] = {}
    try:
        async with launch_server(folder, transport=transport, episode_process="fork",  # type: ignore[arg-type]
                                 startup_timeout=STARTUP_S) as server:
            async with server.episode(_initial(folder)) as episode:
                assert not (await episode.call_tool("cancel_order", {"order_id": "O-1002"})).is_error
                served: int = server.pid  # type: ignore[attr-defined]
                template = _template()
                [zygote] = _children(template)  # this server's: the only one running
                episodes = _children(zygote)
                seen = {"ns": {"served": _ns(served), "zygote": _ns(zygote), "template": _ns(template)},
                        "status": _status(zygote), "served_status": _status(served), "episodes": episodes,
                        "limits": {"served": _limits(served), "zygote": _limits(zygote)},
                        "template_cmd": _cmdline(template).decode(errors="replace")}
                os.kill(served, signal.SIGKILL)
                deadline = time.monotonic() + 15
                while _alive([zygote, *episodes]) and time.monotonic() < deadline:
                    time.sleep(0.05)
                seen["left"] = _alive([zygote, *episodes])
    except Exception:  # the launcher's close meets a server already gone
        if "left" not in seen:
            raise
    return seen


def check_killed_run(seen: dict[str, Any]) -> None:
    """The zygote was forked by the template into its server's namespaces, as its user with its limits, and it
    and its episodes were gone after the server's SIGKILL."""
    status, ns = seen["status"], seen["ns"]
    assert "isolation.zygote_template" in seen["template_cmd"]  # forked by the template, not spawned
    assert seen["episodes"], "the open episode's process"
    assert len(status["NSpid"].split()) == 2 and status["NSpid"].split()[1] != "1"  # a process of the server's tree
    assert status["Uid"] == seen["served_status"]["Uid"] and status["Gid"] == seen["served_status"]["Gid"]
    assert status["NSpid"].split()[0] != status["NSpid"].split()[1]
    assert seen["limits"]["zygote"] == seen["limits"]["served"] and len(seen["limits"]["zygote"]) == len(LIMITS)
    assert status["Seccomp"] == "2" and status["NoNewPrivs"] == "1"
    if None not in ns.values():  # readable from outside (root; a normal user may not read them)
        assert ns["zygote"] == ns["served"]
        assert all(ns["template"][kind] != ns["served"][kind] for kind in ("pid", "net"))
    assert seen["left"] == []


@pytest.mark.parametrize("transport", ["pipe", "http"])
async def test_the_zygote_is_in_its_server_s_namespaces_as_its_user_and_ends_when_the_server_is_killed(
        tmp_path: Path, open_dir: Path, transport: str) -> None:
    seen = await killed_run(malicious_server(tmp_path, open_dir, 9, code=""), transport)
    assert None not in seen["ns"].values()
    check_killed_run(seen)
    assert int(seen["status"]["Uid"].split()[0]) != 0


def test_as_a_normal_user_too(open_dir: Path) -> None:
    """The same as uid nobody, where the template joins the server's user namespace first."""
    probe = _as_nobody(open_dir, "", "template")
    check_killed_run(probe["seen"])
    assert probe["seen"]["status"]["Uid"].split()[0] == str(probe["uid"])


async def test_no_process_of_a_server_holds_the_template_s_or_the_server_zygote_s_descriptors(
        tmp_path: Path, open_dir: Path) -> None:
    folder = malicious_server(tmp_path, open_dir, 9, code="")
    async with launch_server(folder, transport="pipe", episode_process="fork", startup_timeout=STARTUP_S) as server:
        async with server.episode(_initial(folder)) as episode:
            assert not (await episode.call_tool("cancel_order", {"order_id": "O-1002"})).is_error
            assert _Shared.zygote is not None
            template = _template()
            theirs = _socket_inodes(_Shared.zygote.pid) | _socket_inodes(template)
            ours = {pid: _socket_inodes(pid) for pid in _processes_of(folder)}
    assert theirs and len(ours) >= 4  # the waiter, the server, the zygote, the episode
    assert {pid: held & theirs for pid, held in ours.items() if held & theirs} == {}


async def test_with_the_template_gone_servers_spawn_their_zygotes_and_episodes_still_run(
        tmp_path: Path, open_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = malicious_server(tmp_path, open_dir, 9, code="")
    monkeypatch.setattr(_Shared, "zygote", None)  # a server zygote of this test's own
    try:
        async with launch_server(folder, transport="pipe", episode_process="fork", startup_timeout=STARTUP_S):
            pass
        template = _template()
        os.kill(template, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while _alive([template]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive([template]) == []
        async with launch_server(folder, transport="pipe", episode_process="fork",
                                 startup_timeout=STARTUP_S) as server:
            async with server.episode(_initial(folder)) as episode:
                result = await episode.call_tool("cancel_order", {"order_id": "O-1002"})
                zygote = _zygote_of(folder)
                spawned_by = int(_status(zygote)["PPid"])
                served: int = server.pid  # type: ignore[attr-defined]
                zygote_cmd = _cmdline(zygote)
                final = await episode.final_state()
    finally:
        if _Shared.zygote is not None:
            _Shared.zygote.close()
    assert not result.is_error and final["orders"]["O-1002"]["status"] == "cancelled"
    assert b"isolation.episode_zygote" in zygote_cmd and spawned_by == served


def test_an_episode_zygote_tied_to_nothing_does_not_start() -> None:
    """`--parent -1` (tied by its server's PID namespace) is asked for explicitly: without `--parent` the zygote
    would have neither tie, so it refuses to start."""
    import subprocess
    import sys

    base = [sys.executable, "-s", "-P", "-m", "envscaler_mcp.isolation.episode_zygote"]
    done = subprocess.run([*base, "--channel-fd", "0", "--package", "x"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode != 0 and "usage:" in done.stderr and "Traceback" not in done.stderr


async def test_a_run_whose_template_is_killed_at_its_first_episode_loses_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A faulty machine: the template dies as the run's first episode starts. The servers started after it spawn
    their zygotes, and every episode of the run completes with the verdict the oracle earns."""
    from envscaler_mcp.harness.config import RunConfig
    from envscaler_mcp.harness.oracle import OraclePolicy
    from envscaler_mcp.harness.run import run_eval
    from envscaler_mcp.harness.rundir import RunDir
    from envscaler_mcp.harness.seats import Seat
    from envscaler_mcp.scenario.models import Scenario

    monkeypatch.setattr(_Shared, "zygote", None)  # a server zygote, and so a template, of this test's own
    killed: list[int] = []

    def agent(scenario: Scenario) -> Any:
        if not killed:
            killed.append(_template())
            os.kill(killed[0], signal.SIGKILL)
        return OraclePolicy(scenario)

    config = RunConfig.model_validate({
        "envs": ["clinic_appointments", "ecommerce_orders", "flight_bookings"], "agent": "oracle",
        "transport": "pipe", "episode_process": "fork", "limit": 2, "concurrency": 1, "progress": False})
    try:
        await run_eval(config, tmp_path / "run", agent=Seat("oracle", factory=agent))
    finally:
        if _Shared.zygote is not None:
            _Shared.zygote.close()
    records = RunDir(tmp_path / "run").read_results()
    assert killed and _alive(killed) == []
    assert len(records) == 6 and {r.env_id for r in records} == {"clinic_appointments", "ecommerce_orders",
                                                                  "flight_bookings"}
    assert all(r.status == "completed" and r.success for r in records), [(r.status, r.infra_reason) for r in records]
