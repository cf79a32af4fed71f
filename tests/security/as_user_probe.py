"""Run by test_unprivileged_user.py as an unprivileged user: start the validator sandbox, attack it
through the test seam (validators holding the real os), print what happened as one JSON line."""

from __future__ import annotations

import json
import os
import sys

import anyio

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from tests.security.test_validator_os_layers import CONNECT, EXEC, FILES


async def main(folder: str, port: int) -> None:
    sources = {
        "files": FILES.format(target=f"{folder}/created.txt", secret=f"{folder}/secret.txt"),
        "connect": CONNECT.format(port=port),
        "exec": EXEC.format(target=f"{folder}/executed.txt"),
        "fork": "def check_func(s):\n    return os.fork() >= 0\n",
        "plain": "def check_func(s):\n    return s['ok'] is True\n",
    }
    items = [ChecklistItem(id=k, description="", validator=v) for k, v in sources.items()]
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, _test_seam={"grant_os": True}) as sb:
        results = await sb.run(items, {"ok": True}, {"ok": True})
        report = sb.isolation
    print(json.dumps({"uid": os.getuid(), "layers": {layer.name: layer.active for layer in report.layers},
                      "results": {r.item_id: [r.passed, r.reason] for r in results}}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[2]))
