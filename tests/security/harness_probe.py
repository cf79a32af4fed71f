"""Run by test_harness_unreachable.py, as a normal user (and under tests.security.no_userns): this process
plays the harness. Validators holding the real os/ctypes and environment code in a launched server are
handed its pid (the worst case: they found it) and try to lower its CPU limit, kill it, and find it in /proc;
validators also go for their zygote. Prints what it saw, as one JSON line (if it is still alive to print).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
from pathlib import Path

import anyio

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import launch_server
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from tests.security.test_server_attacks import malicious_server
from tests.security.test_server_limits import attack_module
from tests.security.test_validator_limits_ipc import HONEST, LOWER_LIMITS, cpu_limit

FIND_AND_KILL = """
def check_func(s):
    done = []
    try:
        done.append("listed %s" % ({harness!r} in os.listdir("/proc")))
    except OSError as e:
        done.append("list refused: %r" % e)
    try:
        fd = os.open("/proc/{harness}/status", os.O_RDONLY)
        done.append("read %s" % os.read(fd, 100))
    except OSError as e:
        done.append("read refused: %r" % e)
    try:
        os.kill({harness}, 9)
        done.append("killed")
    except OSError as e:
        done.append("kill refused: %r" % e)
    raise RuntimeError(" | ".join(done))
"""


async def validators() -> dict[str, object]:
    harness = os.getpid()
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        clean = [[r.passed, r.reason] for r in await sb.run(HONEST, {"x": 1}, {"x": 1})]
        [zygote] = sb.worker_pids()
        before = cpu_limit(zygote)
        attacks = [ChecklistItem(id="limits", description="", validator=LOWER_LIMITS.format(harness=harness, limit=1)),
                   ChecklistItem(id="find", description="", validator=FIND_AND_KILL.format(harness=harness))]
        reasons = {r.item_id: r.reason for r in await sb.run(attacks, {}, {})}
        after = cpu_limit(zygote)
        later = [[r.passed, r.reason] for r in await sb.run(HONEST, {"x": 1}, {"x": 1})]
        layers = {layer.name: layer.active for layer in sb.isolation.layers}
        refused = {layer.name: layer.detail for layer in sb.isolation.layers if not layer.active}
    return {"clean": clean, "later": later, "zygote_before": before, "zygote_after": after, "reasons": reasons,
            "layers": layers, "refused": refused, "faults": sb.faults}


async def server() -> dict[str, object]:
    folder = Path(tempfile.mkdtemp(prefix="envscaler-probe-"))
    server_dir = malicious_server(folder, folder, 0, code=attack_module(os.getpid(), kill_signal=9))
    async with launch_server(server_dir, transport="http") as launched:
        async with launched.episode() as ep:
            listed = await ep.call_tool("list_orders", {})
        layers = {layer.name: layer.active for layer in launched.isolation.layers} if launched.isolation else {}
    return {"found": read_result(listed).value["data"], "layers": layers}


async def main() -> None:
    own = resource.getrlimit(resource.RLIMIT_CPU)
    seen = {"uid": os.getuid(), "validators": await validators(), "server": await server()}
    seen["own_limit_kept"] = resource.getrlimit(resource.RLIMIT_CPU) == own
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
