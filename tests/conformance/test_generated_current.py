"""generated_servers/ is current: re-rendering every catalog environment gives the same bytes."""

from __future__ import annotations

import hashlib

import pytest

from envscaler_mcp.catalog.paths import environments_dir, generated_servers_dir
from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.render import build_files
from envscaler_mcp.render.engine import StreamedFile
from envscaler_mcp.render.naming import safe_env_id

ENV_IDS = list_env_ids(environments_dir())


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_generated_server_matches_a_fresh_render(env_id: str) -> None:
    skeleton = get_skeleton(env_id)
    folder = generated_servers_dir() / safe_env_id(env_id)
    assert folder.is_dir(), f"{folder} is missing: run `envscaler-mcp render {env_id}`"
    expected = build_files(skeleton, scenarios_for(skeleton.id))
    present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    assert present == sorted(expected), f"{folder}: files differ; run `envscaler-mcp render {env_id}`"
    for rel, data in expected.items():
        on_disk = (folder / rel).read_bytes()
        if isinstance(data, StreamedFile):  # the scenarios file: made piece by piece, compared by its digest
            same = hashlib.sha256(on_disk).hexdigest() == data.sha256()
        else:
            same = on_disk == data
        assert same, f"{folder / rel} is stale; run `envscaler-mcp render {env_id}`"


def test_every_generated_server_has_a_catalog_environment() -> None:
    root = generated_servers_dir()
    folders = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")) if root.is_dir() else []
    orphans = [f for f in folders if f not in {safe_env_id(e) for e in ENV_IDS}]
    assert not orphans, f"generated_servers/ has servers without an environment: {orphans}"
