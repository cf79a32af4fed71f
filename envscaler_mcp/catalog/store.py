"""Load and save skeletons and scenario sets, with errors that name the file and field."""

from __future__ import annotations

from pathlib import Path

from envscaler_mcp._io import atomic_write_json, iter_jsonl, read_json, validate_model, write_jsonl_atomic
from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir
from envscaler_mcp.errors import UsageError
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

SKELETON_FILE = "skeleton.json"


def load_skeleton(path: Path) -> EnvSkeleton:
    """Load a skeleton from a skeleton.json file or a folder containing one."""
    path = Path(path)
    if path.is_dir():
        path = path / SKELETON_FILE
    return validate_model(EnvSkeleton, read_json(path), path=path)


def save_skeleton(skeleton: EnvSkeleton, folder: Path) -> Path:
    """Atomically write <folder>/<env id>/skeleton.json and return its path."""
    path = Path(folder) / skeleton.id / SKELETON_FILE
    atomic_write_json(path, skeleton.model_dump(mode="json"))
    return path


def list_env_ids(root: Path | None = None) -> list[str]:
    """Ids of the environments under `root` (default: the bundled catalog), sorted."""
    root = root or environments_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / SKELETON_FILE).is_file())


def get_skeleton(env_id: str, root: Path | None = None) -> EnvSkeleton:
    """Load a catalog environment by id, or a skeleton file/folder path."""
    candidate = Path(env_id)
    if candidate.suffix == ".json" or (candidate.is_dir() and (candidate / SKELETON_FILE).is_file()):
        return load_skeleton(candidate)
    root = root or environments_dir()
    folder = root / env_id
    if not (folder / SKELETON_FILE).is_file():
        known = ", ".join(list_env_ids(root)) or "(none)"
        raise UsageError(f"unknown environment '{env_id}'. Known environments: {known}. "
                         "Run `envscaler-mcp list` to see them, or pass a path to a skeleton.json.")
    return load_skeleton(folder)


def load_scenarios(path: Path) -> list[Scenario]:
    """Load a scenario set (JSONL, one Scenario per line)."""
    path = Path(path)
    return [validate_model(Scenario, rec, path=path, where=f"line {n}") for n, rec in iter_jsonl(path)]


def save_scenarios(scenarios: list[Scenario], path: Path) -> None:
    """Atomically write a scenario set as JSONL."""
    write_jsonl_atomic(Path(path), [s.model_dump(mode="json") for s in scenarios])


def scenarios_for(env_id: str, root: Path | None = None) -> list[Scenario]:
    """The catalog's scenarios of one environment ([] when it has none)."""
    path = (root or scenarios_dir()) / f"{env_id}.jsonl"
    return load_scenarios(path) if path.exists() else []


def scenarios_path(target: str | Path, env_id: str, root: Path | None = None) -> Path:
    """The scenario file that belongs to an environment named by id or by a skeleton path.

    A skeleton folder may hold its scenarios beside it (scenarios.jsonl); a skeleton in a data home
    (<home>/environments/<id>/skeleton.json, as `import envscaler` writes it) has them in
    <home>/scenarios/<id>.jsonl; an id uses the catalog's scenarios folder (or `root`).
    """
    candidate = Path(target)
    folder = candidate.parent if candidate.suffix == ".json" else candidate
    if candidate.suffix == ".json" or (folder / SKELETON_FILE).is_file():
        if (folder / "scenarios.jsonl").is_file():
            return folder / "scenarios.jsonl"
        in_home = folder.parent.parent / "scenarios" / f"{env_id}.jsonl"
        if folder.parent.name == "environments" and in_home.is_file():
            return in_home
    return (root or scenarios_dir()) / f"{env_id}.jsonl"


def scenarios_of(target: str | Path, env_id: str, root: Path | None = None) -> list[Scenario]:
    """The scenarios of an environment named by id or skeleton path ([] when it has none)."""
    path = scenarios_path(target, env_id, root)
    return load_scenarios(path) if path.is_file() else []
