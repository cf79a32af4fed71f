"""Resolve what to launch: a bundled env id, a rendered server folder, or an EnvSkeleton."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_mcp.catalog.paths import generated_servers_dir
from envscaler_mcp.errors import UsageError
from envscaler_mcp.render import ensure_rendered, is_current, read_manifest
from envscaler_mcp.render.naming import safe_env_id
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

Target = str | Path | EnvSkeleton


@dataclass(frozen=True)
class ServerDir:
    """A rendered server folder and the import name of its package."""

    path: Path
    package: str

    @property
    def env_id(self) -> str:
        return self.package.removesuffix("_mcp")

    def code_hash(self) -> str:
        """sha256 over the package's Python files (environment and runtime, as they are on disk now): what
        the server runs, so anything that could change a replay changes it."""
        digest = hashlib.sha256()
        root = self.path / self.package
        for file in sorted(root.rglob("*.py")):
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
        return digest.hexdigest()


def server_dir_info(path: Path) -> ServerDir:
    """Describe a rendered server folder; raises UsageError when `path` is not one."""
    path = Path(path).resolve()
    manifest = read_manifest(path)
    if manifest and isinstance(manifest.get("package"), str) and (path / manifest["package"]).is_dir():
        return ServerDir(path, manifest["package"])
    candidates = sorted(p.name for p in path.glob("*_mcp") if (p / "spec.json").is_file())
    if len(candidates) == 1:
        return ServerDir(path, candidates[0])
    raise UsageError(f"{path} is not a generated server folder (no manifest.json and no single <env>_mcp/ "
                     "package with spec.json). Render one with `envscaler-mcp render`.")


def resolve_target(target: Target, scenarios: Sequence[Scenario] | None = None) -> ServerDir:
    """Find (or render) the server folder for `target`.

    * EnvSkeleton: rendered into the cache (with `scenarios`, default none) unless already there.
    * a folder: used as is when it is a rendered server.
    * an env id: generated_servers/<env> when current, else rendered into the cache.
    """
    if isinstance(target, EnvSkeleton):
        return server_dir_info(ensure_rendered(target, list(scenarios or [])))
    path = Path(target)
    if path.is_dir() and ((path / "manifest.json").is_file() or any(path.glob("*_mcp/spec.json"))):
        return server_dir_info(path)
    from envscaler_mcp.catalog.store import StoredScenarios, get_skeleton, scenarios_path

    skeleton = get_skeleton(str(target))
    # the catalog's scenarios, each read from its line when the render's hash or writer reaches it: holding them
    # all (a 148 MB file of 1.3 MB states) made the gate's process peak at 2.8 GB
    scenario_list = scenarios if scenarios is not None else StoredScenarios(scenarios_path(str(target), skeleton.id))
    bundled = generated_servers_dir() / safe_env_id(skeleton.id)
    if is_current(bundled, skeleton, scenario_list):
        return server_dir_info(bundled)
    return server_dir_info(ensure_rendered(skeleton, scenario_list))


def read_spec(server: ServerDir) -> dict[str, Any]:
    """The spec.json of a server folder (tools, state names, names)."""
    spec: dict[str, Any] = json.loads((server.path / server.package / "spec.json").read_text(encoding="utf-8"))
    return spec


def trusted_origin(target: Target) -> bool:
    """True when `target`'s environment code is hand-authored (a catalog environment or skeleton whose
    provenance says so); imported and synthesized code, and a server folder of unknown origin, are untrusted."""
    if isinstance(target, EnvSkeleton):
        return target.provenance.source == "hand-authored"
    path = Path(target)
    if path.is_dir() and ((path / "manifest.json").is_file() or any(path.glob("*_mcp/spec.json"))):
        return False
    from envscaler_mcp.catalog.store import get_skeleton

    try:
        return get_skeleton(str(target)).provenance.source == "hand-authored"
    except (UsageError, OSError, ValueError):
        return False
