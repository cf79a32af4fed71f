"""A command started with spawn_tied ends with the process that started it, even when that process is killed
with SIGKILL, and even when the thread that started it ended long before (the local model server's case).
Proved by effect: the command's process is gone (or never was a zombie left running)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from envscaler_mcp.isolation.lifeline import spawn_tied

SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"


def alive(pid: int) -> bool:
    """True while `pid` runs (a zombie is dead: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_for(predicate: object, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def pid_from(path: Path) -> int:
    assert wait_for(lambda: path.exists() and path.read_text().strip()), "the command never started"
    return int(path.read_text())


def test_the_command_dies_with_a_parent_killed_by_sigkill_after_its_starting_thread_ended(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    parent = textwrap.dedent(f"""
        import subprocess, sys, threading, time
        from envscaler_mcp.isolation.lifeline import spawn_tied
        started = []
        thread = threading.Thread(target=lambda: started.append(spawn_tied(
            [sys.executable, "-c", {SLEEPER!r}, {str(pid_file)!r}])))
        thread.start(); thread.join()  # the starting thread is gone from here on
        print("ready", flush=True)
        time.sleep(600)
    """)
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parents[2])
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        command = pid_from(pid_file)
        time.sleep(0.5)
        assert alive(command), "the command ended with the thread that started it"
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert wait_for(lambda: not alive(command)), "the command outlived its parent's SIGKILL"
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_the_command_dies_with_its_parent_even_when_a_forked_child_still_holds_the_lifeline(
        tmp_path: Path, pidfd: bool) -> None:
    """Attack on the pipe alone: a child forked without exec (multiprocessing's default) inherits the write end
    of the lifeline, so the keeper would never see EOF while that child lives. Also on a kernel without pidfds
    (the keeper then polls its parent once a second)."""
    pid_file, forked_file = tmp_path / "pid", tmp_path / "forked"
    keeper = "" if pidfd else textwrap.dedent("""
        import subprocess
        def spawn_tied(command):  # the keeper as spawn_tied starts it, with os.pidfd_open taken away
            code = ("import os, sys; del os.pidfd_open; from envscaler_mcp.isolation.lifeline import main; "
                    "sys.exit(main(sys.argv[1:]))")
            return subprocess.Popen([sys.executable, "-c", code, "--parent", str(os.getpid()), "--", *command],
                                    stdin=subprocess.PIPE)
    """)
    parent = textwrap.dedent(f"""
        import os, sys, time
        from envscaler_mcp.isolation.lifeline import spawn_tied
        {{keeper}}
        keeper = spawn_tied([sys.executable, "-c", {SLEEPER!r}, {str(pid_file)!r}])
        if os.fork() == 0:  # holds every fd of the parent, the lifeline's write end included
            open({str(forked_file)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
            os._exit(0)
        print("ready", flush=True)
        time.sleep(600)
    """).replace("{keeper}", keeper)
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parents[2])
    forked = 0
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        command, forked = pid_from(pid_file), pid_from(forked_file)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert alive(forked), "the forked child is gone: this test proved nothing"
        assert wait_for(lambda: not alive(command)), "the command outlived its parent while a fork held the pipe"
    finally:
        process.kill()
        process.wait()
        if forked:
            os.kill(forked, signal.SIGKILL)


def test_the_keeper_reports_the_commands_exit_and_passes_sigterm_on(tmp_path: Path) -> None:
    assert spawn_tied([sys.executable, "-c", "raise SystemExit(3)"]).wait(30) == 3
    keeper = spawn_tied([sys.executable, "-c", SLEEPER, str(tmp_path / "pid")])
    command = pid_from(tmp_path / "pid")
    keeper.terminate()
    assert keeper.wait(30) == 128 + signal.SIGTERM
    assert wait_for(lambda: not alive(command))


def test_a_keeper_killed_outright_takes_the_command_with_it(tmp_path: Path) -> None:
    keeper = spawn_tied([sys.executable, "-c", SLEEPER, str(tmp_path / "pid")])
    command = pid_from(tmp_path / "pid")
    keeper.kill()
    keeper.wait(30)
    assert wait_for(lambda: not alive(command)), "the command outlived its keeper's SIGKILL"


def test_a_command_that_cannot_start_is_one_line_and_exit_127() -> None:
    keeper = spawn_tied(["/nonexistent/llama-server"], stderr=subprocess.PIPE)
    _, err = keeper.communicate(timeout=30)
    assert keeper.returncode == 127 and err.decode().count("\n") == 1 and "cannot start" in err.decode()
    with pytest.raises(ValueError, match="stdin"):
        spawn_tied(["true"], stdin=subprocess.DEVNULL)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs os.pidfd_open")
def test_the_keeper_waits_without_polling(tmp_path: Path) -> None:
    keeper = spawn_tied([sys.executable, "-c", SLEEPER, str(tmp_path / "pid")])
    pid_from(tmp_path / "pid")
    before = _cpu_ticks(keeper.pid)
    time.sleep(2.0)
    assert _cpu_ticks(keeper.pid) - before <= 2  # asleep in select, not looping
    keeper.terminate()
    keeper.wait(30)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_a_keeper_whose_parent_is_already_gone_starts_nothing(tmp_path: Path) -> None:
    # As if the parent died between starting the keeper and the keeper starting the command: the keeper's
    # parent is not the one it was started for.
    marker = tmp_path / "started"
    keeper = subprocess.run([sys.executable, "-m", "envscaler_mcp.isolation.lifeline", "--parent", "1", "--",
                             sys.executable, "-c", f"open({str(marker)!r}, 'w')"],
                            cwd=Path(__file__).resolve().parents[2], stdin=subprocess.PIPE, timeout=30, check=False)
    assert keeper.returncode == 1 and not marker.exists()
