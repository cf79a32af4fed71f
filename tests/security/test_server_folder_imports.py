"""A server folder is untrusted as a whole, not only its environment module.

Files planted beside the package (an imported data home, a downloaded server folder) are imported by the
interpreter that starts the server if that folder is on the module search path while it starts: Python's
`sitecustomize`, a module named like one the launcher imports (`argparse`), or a package shadowing the
launcher itself (`envscaler_mcp`). Each planted file writes a marker into a world-writable folder, so the
test fails if any of it ran before the OS layers were in place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.launch import launch_server
from envscaler_mcp.render import render_server
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

pytestmark = pytest.mark.anyio
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"

PLANTED = ("sitecustomize.py", "argparse.py", "json.py", "envscaler_mcp/__init__.py",
           "envscaler_mcp/isolation/__init__.py", "envscaler_mcp/isolation/confine_server.py")


def planted_server(folder: Path, markers: Path) -> Path:
    skeleton = EnvSkeleton.model_validate_json((FIXTURE / "skeleton.json").read_text())
    scenarios = [Scenario.model_validate_json(line) for line in (FIXTURE / "scenarios.jsonl").read_text().splitlines()
                 if line.strip()]
    out = render_server(skeleton, scenarios, folder / "server")
    for rel in PLANTED:
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / rel.replace("/", "_")
        path.write_text(f"open({str(marker)!r}, 'w').write('ran unconfined')\n")
    return out


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_files_beside_the_package_do_not_run_before_the_os_layers(tmp_path: Path, open_dir: Path,
                                                                       transport: str) -> None:
    server_dir = planted_server(tmp_path, open_dir)
    try:
        async with launch_server(server_dir, transport=transport) as server:  # type: ignore[arg-type]
            async with server.episode() as ep:
                listed = await ep.call_tool("list_orders", {})
    except Exception:
        listed = None
    assert sorted(p.name for p in open_dir.iterdir()) == [], "planted code ran outside the OS layers"
    assert listed is not None and not listed.is_error, "the server no longer starts from its folder"
