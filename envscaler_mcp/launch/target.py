"""Resolve what to launch: a bundled env id, a rendered server folder, or an EnvSkeleton."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp.catalog.paths import generated_servers_dir
from envscaler_mcp.errors import UsageError
from envscaler_mcp.render.cache import cached, render_into_cache, rendered
from envscaler_mcp.render.engine import (
    Fingerprint,
    read_manifest,
    scenarios_hash,
    templates_hash,
    verified_files,
)
from envscaler_mcp.render.naming import safe_env_id
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

Target = str | Path | EnvSkeleton


# Files of a server's package that a replay does not depend on: the bundled scenarios (prompts, episodes opened
# by scenario id; a replay's episode is opened at the scenario's own initial state).
_NOT_REPLAYED = ("data/scenarios.json",)


@dataclass(frozen=True)
class ServerDir:
    """A rendered server folder and the import name of its package; `files`: its files as checked against its
    manifest (relative path -> sha256) when it was resolved from a skeleton, None when not checked."""

    path: Path
    package: str
    files: Mapping[str, str] | None = field(default=None, compare=False, repr=False)

    @property
    def env_id(self) -> str:
        return self.package.removesuffix("_mcp")

    def code_hash(self) -> str:
        """sha256 over the package's files (path and sha256 of each: the environment's code, the runtime,
        spec.json with the tools' input schemas and the state's names, the default state) as they are on disk
        now, all but the bundled scenarios: what a replay runs on, so anything that could change a replay
        changes it. A folder checked against its manifest when resolved is not read again (its digests are
        the manifest's, each just compared with the file's bytes)."""
        prefix = self.package + "/"
        digests = self.files if self.files is not None else _package_digests(self.path, self.package)
        digest = hashlib.sha256()
        for rel in sorted(digests):
            if rel.startswith(prefix) and rel.removeprefix(prefix) not in _NOT_REPLAYED:
                digest.update(rel.encode() + b"\0" + digests[rel].encode() + b"\0")
        return digest.hexdigest()


def _package_digests(path: Path, package: str) -> dict[str, str]:
    """sha256 of every file of a server folder's package (caches left out), by path relative to the folder."""
    found = {}
    for file in sorted((path / package).rglob("*")):
        if file.is_file() and "__pycache__" not in file.parts:
            with file.open("rb") as f:
                found[file.relative_to(path).as_posix()] = hashlib.file_digest(f, "sha256").hexdigest()
    return found


def server_dir_info(path: Path, files: Mapping[str, str] | None = None) -> ServerDir:
    """Describe a rendered server folder (`files`: its files as just checked); raises UsageError when `path`
    is not one."""
    path = Path(path).resolve()
    manifest = read_manifest(path)
    if manifest and isinstance(manifest.get("package"), str) and (path / manifest["package"]).is_dir():
        return ServerDir(path, manifest["package"], files)
    candidates = sorted(p.name for p in path.glob("*_mcp") if (p / "spec.json").is_file())
    if len(candidates) == 1:
        return ServerDir(path, candidates[0])
    raise UsageError(f"{path} is not a generated server folder (no manifest.json and no single <env>_mcp/ "
                     "package with spec.json). Render one with `envscaler-mcp render`.")


def _is_server_folder(path: Path) -> bool:
    return path.is_dir() and ((path / "manifest.json").is_file() or any(path.glob("*_mcp/spec.json")))


def resolve_target(target: Target, scenarios: Sequence[Scenario] | None = None) -> ServerDir:
    """Find (or render) the server folder for `target`.

    * EnvSkeleton: rendered into the cache (with `scenarios`, default none) unless already there.
    * a folder: used as is when it is a rendered server.
    * an env id: generated_servers/<env> when current, else rendered into the cache.
    """
    return resolve_launch(target, scenarios)[0]


def resolve_launch(target: Target, scenarios: Sequence[Scenario] | None = None) -> tuple[ServerDir, bool]:
    """resolve_target, and whether the environment's code is trusted (`trusted_origin`), with the skeleton read
    once and its hashes worked out once (both are per environment, and a catalog has thousands)."""
    if isinstance(target, EnvSkeleton):
        trusted = target.provenance.source == "hand-authored"
        return server_dir_info(*rendered(target, list(scenarios or []))), trusted
    path = Path(target)
    if _is_server_folder(path):
        return server_dir_info(path), False
    from envscaler_mcp.catalog.hashed import hashed_skeleton, skeleton_facts
    from envscaler_mcp.catalog.store import StoredScenarios, scenarios_path

    facts = skeleton_facts(str(target))  # kept from planning the run: the skeleton is read only to render it
    trusted = facts.source == "hand-authored"
    # the catalog's scenarios, each read from its line when the render's hash or writer reaches it: holding them
    # all (a 148 MB file of 1.3 MB states) made the gate's process peak at 2.8 GB
    scenario_list = scenarios if scenarios is not None else StoredScenarios(scenarios_path(str(target), facts.id))
    expected = Fingerprint(facts.content_hash, scenarios_hash(scenario_list), templates_hash())
    bundled = generated_servers_dir() / safe_env_id(facts.id)
    files = verified_files(bundled, expected)
    if files is not None:
        return server_dir_info(bundled, files), trusted
    found = cached(facts.id, expected)
    if found is not None:
        return server_dir_info(*found), trusted
    skeleton, skeleton_hash = hashed_skeleton(str(target))
    if skeleton_hash != facts.content_hash:  # the file changed since: what is rendered is the skeleton read now
        expected = Fingerprint(skeleton_hash, expected.scenarios, expected.templates)
        trusted = skeleton.provenance.source == "hand-authored"
        return server_dir_info(*rendered(skeleton, scenario_list, expected=expected)), trusted
    return server_dir_info(*render_into_cache(skeleton, scenario_list, expected)), trusted  # not there: checked above


def read_spec(server: ServerDir) -> dict[str, Any]:
    """The spec.json of a server folder (tools, state names, names)."""
    spec: dict[str, Any] = json.loads((server.path / server.package / "spec.json").read_text(encoding="utf-8"))
    return spec


def trusted_origin(target: Target) -> bool:
    """True when `target`'s environment code is hand-authored (a catalog environment or skeleton whose
    provenance says so); imported and synthesized code, and a server folder of unknown origin, are untrusted."""
    if isinstance(target, EnvSkeleton):
        return target.provenance.source == "hand-authored"
    if _is_server_folder(Path(target)):
        return False
    from envscaler_mcp.catalog.store import get_skeleton

    try:
        return get_skeleton(str(target)).provenance.source == "hand-authored"
    except (UsageError, OSError, ValueError):
        return False
