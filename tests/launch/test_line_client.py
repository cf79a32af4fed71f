"""launch/lines.py's client end of a server's pipes: each sender writes its own line and the session's receive
loop reads the server's, with no task between. Lines from concurrent senders never interleave, a line whose
sender is cancelled halfway still arrives whole, and a server that takes no line ends the connection instead
of hanging its senders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCNotification

from envscaler_mcp.launch.lines import line_client
from envscaler_mcp.launch.zygote_child import ZygoteChild

pytestmark = pytest.mark.anyio

# Reads JSON lines from stdin (after `delay` seconds) and answers each with a notification holding its length
# and whether it was a JSON object: what the test's sender sent, checked on the other side of the pipe.
ECHO = """
import json, sys, time
time.sleep(float(sys.argv[1]))
for line in sys.stdin.buffer:
    try:
        ok = isinstance(json.loads(line), dict)
    except ValueError:
        ok = False
    answer = {"jsonrpc": "2.0", "method": "seen", "params": {"bytes": len(line), "ok": ok}}
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""
SILENT = "import time\ntime.sleep(60)\n"  # never reads its stdin


def _params(script: str, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-c", script, *args])


def _fd_pipes(params: StdioServerParameters) -> Callable[[], Awaitable[ZygoteChild]]:
    """A `start` giving the process as the server zygote does: raw non-blocking pipes (a write can stop halfway
    through a line), its exit code on a status pipe."""

    async def start() -> ZygoteChild:
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        status_r, status_w = os.pipe()
        popen = subprocess.Popen([params.command, *params.args], stdin=stdin_r, stdout=stdout_w)
        os.close(stdin_r)
        os.close(stdout_w)

        def report() -> None:
            os.write(status_w, str(popen.wait()).encode())
            os.close(status_w)

        threading.Thread(target=report, daemon=True).start()
        return ZygoteChild(popen.pid, os.pidfd_open(popen.pid), status_r, stdin=stdin_w, stdout=stdout_r)

    return start


def _start(kind: str, params: StdioServerParameters) -> Callable[[], Awaitable[ZygoteChild]] | None:
    return _fd_pipes(params) if kind == "fd" else None


KINDS = pytest.mark.parametrize("kind", ["fd", "anyio"])


def _note(size: int, tag: int) -> SessionMessage:
    return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="big", params={"tag": tag, "pad": "x" * size}))


async def _seen(read_stream: object, count: int) -> list[dict[str, object]]:
    got = []
    with anyio.fail_after(60):
        for _ in range(count):
            message = await read_stream.receive()  # type: ignore[attr-defined]
            got.append(message.message.params)
    return got


@KINDS
async def test_concurrent_senders_lines_stay_whole(tmp_path: Path, kind: str) -> None:
    size = 300_000  # past a pipe's 64 KiB buffer: each write waits on the reader halfway
    params = _params(ECHO, "0.3")
    with open(tmp_path / "err.log", "w") as errlog:
        async with line_client(params, errlog, _start(kind, params)) as (read_stream, write_stream):
            async with anyio.create_task_group() as tg:
                for tag in range(6):
                    tg.start_soon(write_stream.send, _note(size, tag))
            seen = await _seen(read_stream, 6)
    assert all(s["ok"] for s in seen), seen
    assert len(seen) == 6 and all(int(str(s["bytes"])) > size for s in seen)


@KINDS
async def test_a_cancelled_sender_still_writes_its_line_whole(tmp_path: Path, kind: str) -> None:
    params = _params(ECHO, "1.0")
    with open(tmp_path / "err.log", "w") as errlog:
        async with line_client(params, errlog, _start(kind, params)) as (read_stream, write_stream):
            with anyio.move_on_after(0.2) as scope:  # the server reads nothing for a second: the write waits
                await write_stream.send(_note(1_000_000, 1))
            await write_stream.send(_note(10, 2))  # the next line follows the whole first one
            seen = await _seen(read_stream, 2)
    assert scope.cancel_called  # cancelled while its line was halfway into the pipe
    assert [s["ok"] for s in seen] == [True, True]
    assert int(str(seen[0]["bytes"])) > 1_000_000 and int(str(seen[1]["bytes"])) < 100


@KINDS
async def test_a_server_taking_no_line_ends_the_connection(tmp_path: Path, kind: str) -> None:
    params = _params(SILENT)
    with open(tmp_path / "err.log", "w") as errlog:
        async with line_client(params, errlog, _start(kind, params), write_timeout_s=1.0) as (read_stream, write_stream):
            with anyio.fail_after(30):
                with pytest.raises(anyio.BrokenResourceError):
                    await write_stream.send(_note(1_000_000, 1))  # the pipe fills; nobody reads
                with pytest.raises(anyio.EndOfStream):
                    await read_stream.receive()  # the session's receive loop sees the end
                with pytest.raises(anyio.ClosedResourceError):
                    await write_stream.send(_note(10, 2))


@KINDS
async def test_the_server_exiting_ends_the_read_stream(tmp_path: Path, kind: str) -> None:
    script = "import sys\nsys.stdout.write('{\"jsonrpc\": \"2.0\", \"method\": \"bye\"}\\n')\n"
    params = _params(script)
    with open(tmp_path / "err.log", "w") as errlog:
        async with line_client(params, errlog, _start(kind, params)) as (read_stream, _write_stream):
            with anyio.fail_after(30):
                first = await read_stream.receive()
                with pytest.raises(anyio.EndOfStream):
                    await read_stream.receive()
    assert json.loads(first.message.model_dump_json())["method"] == "bye"
