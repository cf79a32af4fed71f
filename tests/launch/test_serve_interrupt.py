"""`serve` ends on Ctrl-C as a terminal sends it (SIGINT to the foreground process group): one line, exit
code 130, no traceback, and no process of the group left behind, over stdio and HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "envscaler_mcp", "serve", "ecommerce_orders", *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        # a process group of its own, as a terminal's foreground job has; SIGINT at its default even when the
        # suite runs as a script's background job (SIGINT ignored, and inherited)
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _interrupt(process: subprocess.Popen[str], seen: str) -> list[str]:
    """Ctrl-C to the whole group; the lines it printed on stderr, after `seen`."""
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, seen + err
    with pytest.raises(ProcessLookupError):
        os.killpg(process.pid, 0)  # nothing of the group is left: the server is gone
    return [line for line in err.splitlines() if line.strip()]


@pytest.mark.slow
def test_ctrl_c_stops_the_stdio_server_with_one_line() -> None:
    process = _start()
    try:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        process.stdin.write(json.dumps(INITIALIZE) + "\n")
        process.stdin.flush()
        reply = json.loads(process.stdout.readline())  # the server answers: it is serving
        assert reply["id"] == 1 and "result" in reply
        seen = process.stderr.readline()
        assert seen.startswith("serving ") and "(stdio)" in seen
        assert _interrupt(process, seen) == ["stopped (interrupted)"]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.slow
def test_ctrl_c_stops_the_http_server_with_one_line() -> None:
    process = _start("--http", "--port", "0")
    try:
        assert process.stderr is not None
        seen = ""
        while "/mcp" not in seen:  # the server's own line once it accepts connections
            line = process.stderr.readline()
            assert line, seen  # it ended before serving
            seen += line
        assert _interrupt(process, seen) == ["stopped (interrupted)"]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
