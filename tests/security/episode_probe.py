"""Run by test_episode_processes.py, test_episode_attacks.py and test_zygote_template.py as an unprivileged user: an attack of those
tests against a server folder rendered for it, episodes in processes of their own; prints what happened as
one JSON line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import launch_server
from tests.security.test_episode_processes import _attacked_run, _clean_run


async def threads(folder: str) -> None:
    """The thread bomb of test_server_limits.py in an episode process."""
    async with launch_server(Path(folder), transport="pipe", episode_process="fork") as server:
        async with server.episode() as ep:
            bomb = await ep.call_tool("get_order", {"order_id": "threads"})
            after = await ep.call_tool("list_orders", {})
        report = server.isolation
    assert report is not None
    print(json.dumps({"uid": os.getuid(), "threads": read_result(bomb).value["data"]["threads"],
                      "served_after": not after.is_error,
                      "layers": {layer.name: [layer.active, layer.detail] for layer in report.layers}}))


async def main(folder: str) -> None:
    clean = await _clean_run(Path(folder))
    run = await _attacked_run(Path(folder), "pipe", "fork")
    print(json.dumps({"uid": os.getuid(), "data": read_result(run["attack"]).value["data"],
                      "same_as_clean": run["final"] == clean, "left": run["left"],
                      "layers": {layer.name: layer.active for layer in run["report"].layers}}))


async def hang(folder: str) -> None:
    """The never-returning call of test_episode_attacks.py."""
    from tests.security.test_episode_attacks import hang_run
    print(json.dumps({"uid": os.getuid(), **await hang_run(Path(folder))}))


async def template(folder: str) -> None:
    """The zygote forked by the zygote template, seen from outside, and the server killed (test_zygote_template.py)."""
    from tests.security.test_zygote_template import killed_run
    print(json.dumps({"uid": os.getuid(), "seen": await killed_run(Path(folder), "pipe")}))


if __name__ == "__main__":
    anyio.run({"threads": threads, "hang": hang, "template": template}.get(sys.argv[2] if sys.argv[2:] else "", main), sys.argv[1])
