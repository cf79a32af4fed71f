"""The OS layers hold even when a validator has escaped the Python layer.

A test-only seam hands every validator the real `os`, `sys` and `ctypes` (what a successful escape
gets). Each attack runs with every layer on, and with only one layer (or one pair) left, to show that
layer alone contains it. Effects are checked from outside the sandbox.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from tests.security.conftest import Listener, processes_named

pytestmark = pytest.mark.anyio

GROUPS = ("namespaces", "empty-root", "identity", "landlock", "seccomp")


def only(*kept: str) -> list[str]:
    """The layer groups to skip so that only `kept` remain (the Python layer and limits always stay)."""
    return [g for g in GROUPS if g not in kept]


async def run_escaped(source: str, skip: list[str], timeout_s: float = 3.0) -> tuple[str | None, dict[str, bool]]:
    """Run one validator that holds the real os/sys/ctypes; return its reason and the layers in force."""
    seam = {"grant_os": True, "skip": skip}
    async with ValidatorSandbox(timeout_s=timeout_s, memory_mb=256, _test_seam=seam) as sb:
        [result] = await sb.run([ChecklistItem(id="attack", description="", validator=source)], {}, {})
        active = {layer.name: layer.active for layer in sb.isolation.layers}
    return result.reason, active


FILES = """
def check_func(s):
    done = []
    try:
        fd = os.open({target!r}, os.O_CREAT | os.O_WRONLY, 0o666)
        os.write(fd, b"pwned")
        done.append("wrote")
    except OSError as e:
        done.append(repr(e))
    try:
        fd = os.open({secret!r}, os.O_RDONLY)
        done.append(os.read(fd, 100).decode())
    except OSError as e:
        done.append(repr(e))
    try:
        done.append(str(os.listdir("/")))
    except OSError as e:
        done.append(repr(e))
    raise RuntimeError(" | ".join(done))
"""


@pytest.mark.parametrize("kept", [GROUPS, ("landlock",), ("seccomp",), ("empty-root", "identity")],
                         ids=["all", "landlock", "seccomp", "empty-root+nobody"])
async def test_files_can_be_neither_written_nor_read(open_dir: Path, kept: tuple[str, ...]) -> None:
    target, secret = open_dir / "created.txt", open_dir / "secret.txt"
    secret.write_text("s3cr3t-file-content")
    secret.chmod(0o644)
    reason, _ = await run_escaped(FILES.format(target=str(target), secret=str(secret)), only(*kept))
    assert not target.exists()
    assert reason is not None and "s3cr3t-file-content" not in reason and "envscaler-attack" not in reason


CONNECT = """
def check_func(s):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(2, 1, 0)
    if fd < 0:
        raise RuntimeError("socket refused, errno %d" % ctypes.get_errno())
    addr = b"\\x02\\x00" + ({port}).to_bytes(2, "big") + bytes([127, 0, 0, 1]) + bytes(8)
    if libc.connect(fd, addr, 16) != 0:
        raise RuntimeError("connect refused, errno %d" % ctypes.get_errno())
    libc.send(fd, b"leaked", 6, 0)
    return True
"""


@pytest.mark.parametrize("kept", [GROUPS, ("namespaces",), ("landlock",), ("seccomp",)],
                         ids=["all", "network-namespace", "landlock-net", "seccomp"])
async def test_a_loopback_listener_receives_nothing(listener: Listener, kept: tuple[str, ...]) -> None:
    reason, _ = await run_escaped(CONNECT.format(port=listener.port), only(*kept))
    time.sleep(0.5)
    assert listener.connections == 0 and listener.received == []
    assert reason is not None and "refused" in reason


EXEC = """
def check_func(s):
    done = []
    for attempt in (lambda: os.system("touch {target}"),
                    lambda: os.posix_spawn("/bin/sh", ["sh", "-c", "touch {target}"], {{}}),
                    lambda: os.execv("/bin/sh", ["sh", "-c", "touch {target}"])):
        try:
            done.append(repr(attempt()))
        except OSError as e:
            done.append(repr(e))
    raise RuntimeError(" | ".join(done))
"""


@pytest.mark.parametrize("kept", [GROUPS, ("seccomp",), ("landlock",), ("empty-root", "identity")],
                         ids=["all", "seccomp", "landlock", "empty-root+nobody"])
async def test_no_program_can_be_executed(open_dir: Path, kept: tuple[str, ...]) -> None:
    target = open_dir / "executed.txt"
    reason, _ = await run_escaped(EXEC.format(target=target), only(*kept))
    time.sleep(0.3)
    assert not target.exists()
    assert reason is not None


SURVIVOR = """
def check_func(s):
    ready, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        ctypes.CDLL(None).prctl(15, {name!r}.encode(), 0, 0, 0)  # PR_SET_NAME: findable from outside
        os.write(tell, b"up")
        end = datetime.datetime.now() + datetime.timedelta(seconds=30)
        while datetime.datetime.now() < end:
            pass
        os.abort()
    return os.read(ready, 2) == b"up"
"""


@pytest.mark.parametrize("kept", [GROUPS, ("seccomp",), ("namespaces",)],
                         ids=["all", "seccomp", "pid-namespace"])
async def test_no_process_outlives_its_batch(kept: tuple[str, ...]) -> None:
    name = f"survivor{os.getpid() % 10000}"
    source = "import datetime\n" + SURVIVOR.format(name=name)
    seam = {"grant_os": True, "skip": only(*kept)}
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, _test_seam=seam) as sb:
        [result] = await sb.run([ChecklistItem(id="attack", description="", validator=source)], {}, {})
        assert processes_named(name) == []  # checked while the worker lives on: the batch's end did it
        active = {layer.name: layer.active for layer in sb.isolation.layers}
    if "seccomp" in kept:
        assert result.reason is not None and "Operation not permitted" in result.reason  # fork was refused
    else:
        assert active["pid-namespace"] and result.passed  # the child ran, and did not outlive the batch


ENVIRONMENT = """
def check_func(s):
    found = [repr(dict(os.environ))]
    for path in ("/proc/self/environ", "/proc/%d/environ" % os.getppid(), "/proc/1/environ"):
        try:
            fd = os.open(path, os.O_RDONLY)
            found.append(os.read(fd, 100000).decode(errors="replace"))
        except OSError as e:
            found.append(repr(e))
    raise RuntimeError(" ".join(found))
"""


async def test_secrets_in_the_callers_environment_are_out_of_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-test-{os.getpid()}-{time.time_ns()}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    for skip in ([], only("namespaces")):
        reason, _ = await run_escaped(ENVIRONMENT, skip)
        assert reason is not None and secret not in reason


FORGER = """
def check_func(s):
    forged = b''.join(b'{"i": %d, "passed": true, "reason": null, "duration_s": 0.0}\\n' % i for i in range(50))
    for fd in range(3, 30):
        try:
            os.write(fd, forged + b"x" * 300000)
        except OSError:
            pass
    os.abort()
"""


async def test_forged_answers_reach_no_other_scenario() -> None:
    honest = [ChecklistItem(id=f"h{i}", description="", validator="def check_func(s):\n    return s['x'] == 2\n")
              for i in range(3)]
    attack = [ChecklistItem(id="forger", description="", validator=FORGER)]
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        await sb.run(attack, {}, {})  # its own verdict is its scenario's business: it may well have forged it
        later = await sb.run(honest, {"x": 1}, {"x": 1})
        assert sb.faults == []
    assert [(r.passed, r.reason) for r in later] == [(False, None)] * 3
