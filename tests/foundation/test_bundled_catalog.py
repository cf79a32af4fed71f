"""Every bundled environment builds cleanly and its committed skeleton.json is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.skeleton.build import authoring_dirs, build_folder

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = authoring_dirs(ROOT / "environments")


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_bundled_skeleton_is_current(folder: Path) -> None:
    status = build_folder(folder, check=True)
    assert status == "unchanged", f"{folder.name}/skeleton.json is {status}: run `envscaler-mcp catalog build`"
