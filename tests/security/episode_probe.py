"""Run by test_episode_processes.py as an unprivileged user: the attack of that test against a server folder
rendered for it, episodes in processes of their own; prints what happened as one JSON line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from tests.security.test_episode_processes import _attacked_run, _clean_run


async def main(folder: str) -> None:
    clean = await _clean_run(Path(folder))
    run = await _attacked_run(Path(folder), "pipe", "fork")
    print(json.dumps({"uid": os.getuid(), "data": run["attack"].structured_content["data"],
                      "same_as_clean": run["final"] == clean, "left": run["left"],
                      "layers": {layer.name: layer.active for layer in run["report"].layers}}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
