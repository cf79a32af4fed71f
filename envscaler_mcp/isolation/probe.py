"""Which OS layers a server process gets on this machine, measured without starting a server.

`import envscaler` keeps the static-check problems the layers contain as warnings only when they are all in
force here (skeleton/checks.py); it asks this module first. Standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from envscaler_mcp.isolation import confined_command
from envscaler_mcp.isolation.report import IsolationReport, Layer, from_layers

_PKG_PARENT = str(Path(__file__).resolve().parents[2])


def server_layers(timeout_s: float = 60.0) -> IsolationReport:
    """The layers of a confined server process here: `isolation.confine_server` applies them, writes its report,
    then runs an empty module (`keyword`). Every layer is off when the probe could not run."""
    with tempfile.TemporaryDirectory(prefix="envscaler-layers-") as tmp:
        path = Path(tmp) / "layers.json"
        command = confined_command(["--report", str(path), "--", "-m", "keyword"])
        env = {"PATH": os.defpath, "PYTHONPATH": _PKG_PARENT, "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
        try:
            subprocess.run(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout_s, check=False)
            table = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, subprocess.SubprocessError):
            why = "the probe of the OS layers did not run"
            return IsolationReport(subject="servers", layers=[
                Layer(name=name, active=False, detail=why) for name in ("network-namespace", "landlock-fs", "seccomp")])
    return from_layers("servers", table)
