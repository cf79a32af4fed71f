"""The pipes that carry states hold 1 MiB: the validators' request pipe (sandbox/worker.py) and a pipe server's
answer pipe (the runtime's pipeio.py), so a request or a final state of the usual size goes in one write and
one read. Checked on the pipes as this process holds them (F_GETPIPE_SZ), found through the other process's
descriptors; a machine whose pipe-max-size is lower keeps the default and skips."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from envscaler_mcp.launch.servers import launch_server
from envscaler_mcp.sandbox.validators import ValidatorSandbox

pytestmark = pytest.mark.anyio

_WIDE = 1 << 20


def _pipe_sizes(pid: int) -> list[int]:
    """The buffer sizes of the pipes `pid` holds that this process holds too."""
    def pipes(folder: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name in os.listdir(folder):
            try:
                target = os.readlink(f"{folder}/{name}")
            except OSError:
                continue
            if target.startswith("pipe:"):
                found[target] = int(name)
        return found

    ours = pipes("/proc/self/fd")
    return [fcntl.fcntl(ours[t], fcntl.F_GETPIPE_SZ) for t in pipes(f"/proc/{pid}/fd") if t in ours]


@pytest.fixture(autouse=True)
def _wide_allowed() -> None:
    if int(Path("/proc/sys/fs/pipe-max-size").read_text()) < _WIDE:
        pytest.skip("this machine's pipe-max-size is below 1 MiB")


async def test_the_validators_request_pipe_holds_a_mebibyte() -> None:
    async with ValidatorSandbox(workers=1) as sandbox:
        [zygote] = sandbox.worker_pids()
        assert _WIDE in _pipe_sizes(zygote)


async def test_a_pipe_servers_answer_pipe_holds_a_mebibyte() -> None:
    async with launch_server("ecommerce_orders", "pipe") as server:
        assert server.pid is not None
        assert _WIDE in _pipe_sizes(server.pid)
