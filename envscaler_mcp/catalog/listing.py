"""The rows of `list`, kept in the user cache so that listing 1,000 environments does not read 1,000 skeletons.

A row (id, name, tool and query counts, origin) is kept with the size and modification time of the
skeleton.json it came from (and the scenario count with those of the scenario file), in <user cache>/list/<hash of the environments folder>.json; a skeleton whose size or
time changed is read again, one that is gone is dropped. `import envscaler` puts the rows of what it wrote
(remember()), so the first `list` after an import reads no skeleton either. The cache can be deleted at any
time; an unwritable cache only makes `list` slower.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from envscaler_mcp._io import atomic_write_json, user_cache_dir
from envscaler_mcp.catalog.store import SKELETON_FILE, count_scenarios, get_skeleton, list_env_ids
from envscaler_mcp.skeleton.models import EnvSkeleton, Provenance

Row = list[str]  # id, name, tools, queries, origin (env_rows adds the scenario count)


def origin_text(provenance: Provenance) -> str:
    """Where an environment came from, for `list`: its source, and the generator model when synthesized."""
    generator = provenance.models.get("generator")
    return f"{provenance.source} ({generator})" if provenance.source == "synthesized" and generator else \
        provenance.source


def row_of(skeleton: EnvSkeleton) -> Row:
    queries = sum(t.kind == "query" for t in skeleton.tools)
    return [skeleton.id, skeleton.name, str(len(skeleton.tools)), str(queries), origin_text(skeleton.provenance)]


def _cache_file(env_root: Path) -> Path:
    key = hashlib.sha256(str(Path(env_root).resolve()).encode()).hexdigest()[:24]
    return user_cache_dir() / "list" / f"{key}.json"


def _stamp(path: Path) -> list[int]:
    """A file's size and modification time: what tells that it changed."""
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def _file_stamp(path: Path) -> list[int]:
    """The stamp of a file that may be missing ([] then)."""
    try:
        return _stamp(path)
    except OSError:
        return []


def _read(path: Path) -> dict[str, dict[str, list[object]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, kept: dict[str, dict[str, list[object]]]) -> None:
    try:
        atomic_write_json(path, kept)
    except OSError:  # a read-only cache: the next list reads the skeletons again
        pass


def env_rows(env_root: Path, scen_root: Path) -> list[tuple[str, Row]]:
    """(folder name, `list` row with the scenario count last) of each environment under `env_root`, sorted by
    folder name; a skeleton is read only when it changed, a scenario file counted only when it changed."""
    path = _cache_file(env_root)
    cached = _read(path)
    kept: dict[str, dict[str, list[object]]] = {}
    rows = []
    for env_id in list_env_ids(env_root):
        stamp, scenarios = _stamp(Path(env_root) / env_id / SKELETON_FILE), Path(scen_root) / f"{env_id}.jsonl"
        entry = cached.get(env_id)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("row"), list):
            row = [str(x) for x in entry["row"]]
        else:
            row = row_of(get_skeleton(env_id, env_root))
        counted = _file_stamp(scenarios)
        count = entry.get("count") if isinstance(entry, dict) and entry.get("counted") == counted else None
        if not isinstance(count, list):
            count = [count_scenarios(scenarios)]
        kept[env_id] = {"stamp": list(stamp), "row": list(row), "counted": list(counted), "count": count}
        rows.append((env_id, [*row, str(count[0])]))
    if kept != cached:
        _write(path, kept)
    return rows


def remember(env_root: Path, rows: dict[str, Row]) -> None:
    """Keep the rows of skeletons just written under `env_root` (env id -> row), stamped as they are now."""
    path = _cache_file(env_root)
    kept = _read(path)
    for env_id, row in rows.items():
        try:
            kept[env_id] = {"stamp": list(_stamp(Path(env_root) / env_id / SKELETON_FILE)), "row": list(row)}
        except OSError:
            continue
    _write(path, kept)
