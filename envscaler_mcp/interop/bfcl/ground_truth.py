"""The tasks' ground truth executed as BFCL's checker executes it (envruntime.execute_task), in a process of its
own under the OS layers that confine environment servers (isolation/confine_server.py): BFCL's code is third-party
environment code, so at import too it reads only its own folder and Python's, and reaches no network, file or
process of the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_mcp.isolation import confined_command
from envscaler_mcp.scenario.models import ToolCall

DRIVER = "bfcl_ground_truth"
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_TIMEOUT_S = 600.0


@dataclass
class Execution:
    """What the ground truth of one task did."""

    initial_state: dict[str, Any]  # class name -> its instance as JSON (envruntime.encode_instance)
    outputs: list[list[str]]  # per turn, the text BFCL records for each ground-truth call
    states: list[dict[str, Any]]  # per turn, the state after that turn's calls
    changed: set[str]  # tools whose call changed some class's public attributes


@dataclass
class Request:
    """One task to execute."""

    task: dict[str, Any]
    turns: list[list[ToolCall]]
    long_context: bool


def execute_all(module_text: str, requests: list[Request], *, isolation: bool = True) -> list[Execution | str]:
    """Each request's Execution, or the reason it failed, from one confined process running `module_text`
    (an environment module of envmodule.build_module). RuntimeError when that process fails as a whole."""
    if not requests:
        return []
    lines = "".join(json.dumps({"task": r.task, "long_context": r.long_context,
                                "turns": [[c.model_dump(mode="json") for c in calls] for calls in r.turns]}) + "\n"
                    for r in requests)
    with tempfile.TemporaryDirectory(prefix="envscaler-bfcl-") as folder:
        Path(folder, f"{DRIVER}.py").write_text(
            module_text + "\n\nif __name__ == '__main__':\n    serve_tasks(_SOURCES, _OWNERS)\n", encoding="utf-8")
        command = confined_command(["--read", folder, "--path", folder, *([] if isolation else ["--off"]),
                                    "--", "-m", DRIVER])
        env = {"PATH": os.defpath, "PYTHONPATH": _PACKAGE_PARENT, "PYTHONDONTWRITEBYTECODE": "1",
               "LANG": "C.UTF-8", **{k: os.environ[k] for k in ("TZ",) if k in os.environ}}
        try:
            done = subprocess.run(command, input=lines, capture_output=True, text=True, env=env, cwd=folder,
                                  timeout=_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"executing the ground truth took longer than {_TIMEOUT_S:g} s") from None
    answers = done.stdout.splitlines()
    if done.returncode != 0 or len(answers) != len(requests):
        tail = done.stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise RuntimeError(f"executing the ground truth failed (exit {done.returncode}): {tail[0][:300]}")
    results: list[Execution | str] = []
    for answer in map(json.loads, answers):
        if "error" in answer:
            results.append(f"its ground truth failed to run: {answer['error']}")
        else:
            results.append(Execution(initial_state=answer["initial_state"], outputs=answer["outputs"],
                                     states=answer["states"], changed=set(answer["changed"])))
    return results
