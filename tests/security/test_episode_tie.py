"""An episode's process is tied to the zygote's thread that forked it (runtime/zygote.py `tie`): its
parent-death signal fires when that *thread* ends. Shown by effect on real processes forked from a thread of
this test's process, the zygote's part played by the test:

* the thread ends (the server closed the episode's channel) after the process set its signal: the kernel
  kills the process;
* the race: the thread ends before the process set its signal (the server closed the channel at once, or the
  process was slow to be scheduled). Its parent is still this process (a thread's end does not re-parent
  it), so only the hang-up of its channel tells it: it must not go on to run environment code.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

from tests.render._runtime import load_runtime

zygote = load_runtime("zygote")

WITHIN_S = 60.0  # generous: a loaded machine schedules the child late


def _reaped(pid: int, within: float = WITHIN_S) -> int | None:
    """The wait status of `pid` once it has ended; None if it is still running after `within` seconds (it is
    then killed, so no test leaves it behind)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def _fork_from_a_thread(server_end: socket.socket, episode_end: socket.socket, go: int, parent: int) -> int:
    """Fork from a thread that ends at once; the child waits for `go`, then ties itself as an episode's
    process does and, if tied, stands for environment code that never ends."""
    forked: list[int] = []

    def fork() -> None:
        pid = os.fork()
        if pid == 0:
            try:
                server_end.close()  # as an episode's process closes all but its own descriptors
                os.read(go, 1)
                if zygote.tie(episode_end.fileno(), parent):  # environment code would run here, and never return
                    while True:
                        time.sleep(3600)
            finally:
                os._exit(7)
        forked.append(pid)

    thread = threading.Thread(target=fork)
    thread.start()
    thread.join()
    return forked[0]


def test_a_process_whose_thread_ended_before_it_was_tied_does_not_run() -> None:
    server_end, episode_end = socket.socketpair()
    go_read, go_write = os.pipe()
    pid = _fork_from_a_thread(server_end, episode_end, go_read, os.getpid())
    server_end.close()  # the server closed the episode: its thread ended (above), before the child's prctl
    os.write(go_write, b"x")
    status = _reaped(pid)
    for fd in (go_read, go_write):
        os.close(fd)
    episode_end.close()
    assert status is not None, "the untied process ran on after its thread and channel were gone"
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7, status


def test_a_tied_process_is_killed_when_its_thread_ends() -> None:
    server_end, episode_end = socket.socketpair()
    go_read, go_write = os.pipe()
    tied_read, tied_write = os.pipe()
    parent = os.getpid()
    close_channel = threading.Event()
    forked: list[int] = []

    def fork() -> None:  # the zygote's thread: ends once the server has closed the channel
        pid = os.fork()
        if pid == 0:
            try:
                server_end.close()
                os.read(go_read, 1)
                if zygote.tie(episode_end.fileno(), parent):
                    os.write(tied_write, b"t")
                    while True:
                        time.sleep(3600)
            finally:
                os._exit(7)
        forked.append(pid)
        close_channel.wait()

    thread = threading.Thread(target=fork)
    thread.start()
    os.write(go_write, b"x")
    assert os.read(tied_read, 1) == b"t"  # tied while its thread runs: it went on
    server_end.close()
    close_channel.set()
    thread.join()
    status = _reaped(forked[0])
    for fd in (go_read, go_write, tied_read, tied_write):
        os.close(fd)
    episode_end.close()
    assert status is not None, "the process outlived the thread that forked it"
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


def test_a_process_whose_zygote_is_not_its_parent_does_not_run() -> None:
    """The zygote ended first: the process has another parent (here: told of a zygote, pid 1, it never had)."""
    server_end, episode_end = socket.socketpair()
    go_read, go_write = os.pipe()
    pid = _fork_from_a_thread(server_end, episode_end, go_read, 1)
    os.write(go_write, b"x")
    status = _reaped(pid)
    for fd in (go_read, go_write):
        os.close(fd)
    server_end.close()
    episode_end.close()
    assert status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 7, status
