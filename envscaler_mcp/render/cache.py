"""Render on demand into a cache folder keyed by content hash."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from envscaler_mcp.render.engine import (
    build_files,
    is_current,
    render_server,
    scenarios_hash,
    templates_hash,
    write_files,
)
from envscaler_mcp.render.naming import safe_env_id
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

CACHE_ENV = "ENVSCALER_MCP_CACHE"


def cache_root() -> Path:
    """Folder of rendered-on-demand servers: $ENVSCALER_MCP_CACHE, else ~/.cache/envscaler-mcp/servers."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override) / "servers"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "envscaler-mcp" / "servers"


def cache_key(skeleton: EnvSkeleton, scenarios: Sequence[Scenario]) -> str:
    """16 hex digits identifying (skeleton, scenarios, templates)."""
    text = f"{skeleton.content_hash()}:{scenarios_hash(scenarios)}:{templates_hash()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_rendered(skeleton: EnvSkeleton, scenarios: Sequence[Scenario] = ()) -> Path:
    """Path of a current rendering of `skeleton` + `scenarios`, rendering into the cache when needed."""
    scenarios = list(scenarios)
    out = cache_root() / f"{safe_env_id(skeleton.id)}-{cache_key(skeleton, scenarios)}"
    if is_current(out, skeleton, scenarios):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.")) / "server"
    try:
        write_files(build_files(skeleton, scenarios), staging)
        try:
            staging.rename(out)  # atomic when nobody rendered it meanwhile
        except OSError:
            if not is_current(out, skeleton, scenarios):  # a broken or stale leftover: replace it
                render_server(skeleton, scenarios, out)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)
    return out
