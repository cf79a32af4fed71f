"""`render --ray` on a local Ray cluster (loopback, 2 CPUs): the servers a local render writes, byte for byte
and mode for mode; a bad address is one line and writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app

pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")

ENVS = ["flight_bookings", "it_helpdesk"]
runner = CliRunner()


def tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under root (hidden ones too): its mode and bytes."""
    return {str(p.relative_to(root)): (p.stat().st_mode, p.read_bytes()) for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_render_on_ray_equals_the_local_render(cluster: None, tmp_path: Path) -> None:
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert runner.invoke(app, ["render", *ENVS, "--out", str(local)]).exit_code == 0
    (remote / "it_helpdesk").mkdir(parents=True)
    (remote / "it_helpdesk" / "stale.txt").write_text("from an older render")  # replaced whole, as locally
    result = runner.invoke(app, ["render", *ENVS, "--out", str(remote), "--ray", "auto", "--ray-workers", "2"])
    assert result.exit_code == 0, result.output
    assert sorted(line.split()[1] for line in result.output.splitlines() if line.startswith("rendered")) == sorted(
        str(remote / env) for env in ENVS)
    assert tree(remote) == tree(local) and len(tree(local)) > 4  # no staging folder left either
    assert sorted(p.name for p in remote.iterdir()) == ENVS
    check = runner.invoke(app, ["render", *ENVS, "--out", str(remote), "--check"])
    assert check.exit_code == 0 and check.output.count("current") == 2


def test_render_with_a_bad_ray_address_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "envscaler_mcp", "render", "flight_bookings", "--out", str(out),
                           "--ray", "127.0.0.1:1"],
                          capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""}, timeout=120)
    output = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2 and len(output) == 1 and output[0].startswith("error: --ray 127.0.0.1:1"), output
    assert not out.exists()
