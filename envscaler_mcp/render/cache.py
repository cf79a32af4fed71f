"""Render on demand into a cache folder keyed by content hash, kept under a size cap (least recently used
folders go first)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR

from envscaler_mcp.errors import RenderError
from envscaler_mcp.render.codecache import write_code_cache
from envscaler_mcp.render.engine import (
    Fingerprint,
    build_files,
    fingerprint,
    read_manifest,
    render_server,
    verified_files,
    write_files,
)
from envscaler_mcp.render.naming import package_name, safe_env_id
from envscaler_mcp.render.verified import checked_files, forget
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

CACHE_ENV = "ENVSCALER_MCP_CACHE"
CACHE_MAX_ENV = "ENVSCALER_MCP_CACHE_MAX_MB"
# A 1,000-environment catalog's servers (about 0.6 MB each) fit: below a run's working set, least recently used
# pruning removes the very servers the next command that goes through the catalog in order needs next.
DEFAULT_MAX_MB = 1000
# Automatic pruning leaves alone what was used this recently: a run may still be starting servers from it.
IN_USE_S = 600.0


def cache_root() -> Path:
    """Folder of rendered-on-demand servers: $ENVSCALER_MCP_CACHE, else ~/.cache/envscaler-mcp/servers."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override) / "servers"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "envscaler-mcp" / "servers"


def _key(hashes: Fingerprint) -> str:
    """16 hex digits identifying a rendering's (skeleton, scenarios, templates) fingerprint."""
    text = f"{hashes.skeleton}:{hashes.scenarios}:{hashes.templates}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_rendered(skeleton: EnvSkeleton, scenarios: Sequence[Scenario] = ()) -> Path:
    """Path of a current rendering of `skeleton` + `scenarios`, rendering into the cache when needed. Each pass
    goes through `scenarios` in order, so a StoredScenarios is read one scenario at a time."""
    return rendered(skeleton, scenarios)[0]


def rendered(skeleton: EnvSkeleton, scenarios: Sequence[Scenario] = (), *, expected: Fingerprint | None = None
             ) -> tuple[Path, dict[str, str]]:
    """ensure_rendered, with the folder's files as checked (relative path -> sha256); `expected`: the
    fingerprint of `skeleton` + `scenarios`, when already worked out."""
    expected = expected or fingerprint(skeleton, scenarios)
    found = cached(skeleton.id, expected)
    return found if found is not None else render_into_cache(skeleton, scenarios, expected)


def render_into_cache(skeleton: EnvSkeleton, scenarios: Sequence[Scenario], expected: Fingerprint
                      ) -> tuple[Path, dict[str, str]]:
    """Render `skeleton` + `scenarios` (fingerprint `expected`) into the cache, as `rendered` does when `cached`
    found nothing; a rendering another process put in place meanwhile is kept when current."""
    out = _entry(skeleton.id, expected)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.")) / "server"
    try:
        write_files(build_files(skeleton, scenarios, expected=expected), staging)
        # its environment module compiled for the folder it becomes, so that the folder never changes once in place
        write_code_cache(staging, package_name(skeleton.id), served_from=out.parent.resolve() / out.name)
        try:
            staging.rename(out)  # atomic when nobody rendered it meanwhile
        except OSError:
            if verified_files(out, expected) is None:  # a broken or stale leftover: replace it
                render_server(skeleton, scenarios, out, expected=expected)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)
    mark_used(out)
    prune_cache(keep=out)
    listed = (read_manifest(out) or {}).get("files")  # what was just written and checked by its writer
    if not isinstance(listed, dict):  # pragma: no cover - removed under our feet since
        raise RenderError(f"{out} has no manifest right after it was rendered")
    return out, {str(rel): str(digest) for rel, digest in listed.items()}


def cached(env_id: str, expected: Fingerprint) -> tuple[Path, dict[str, str]] | None:
    """The cache's current rendering of environment `env_id` with the fingerprint `expected` and its files as
    checked, or None when it has none (nothing is rendered here: the skeleton is not needed to look)."""
    out = _entry(env_id, expected)
    files = checked_files(out, expected)  # hashed once, then by the files' stamps (render/verified.py)
    if files is None:
        return None
    mark_used(out)
    return out, files


def _entry(env_id: str, expected: Fingerprint) -> Path:
    return cache_root() / f"{safe_env_id(env_id)}-{_key(expected)}"


def in_render_cache(path: Path) -> bool:
    """Whether `path` is a folder of the render cache (rendered whole, code compiled, then renamed in place)."""
    return path.parent == cache_root()


def mark_used(path: Path) -> None:
    """Mark a cached server as used now (its folder's mtime is the cache's LRU clock); a folder outside the
    cache is left alone."""
    if not in_render_cache(path):
        return
    try:
        os.utime(path)
    except OSError:
        pass


def max_cache_bytes() -> int:
    """The cache's size cap: $ENVSCALER_MCP_CACHE_MAX_MB megabytes (default 1000); 0 keeps nothing unused."""
    text = os.environ.get(CACHE_MAX_ENV, "").strip()
    try:
        megabytes = float(text) if text else DEFAULT_MAX_MB
    except ValueError:
        megabytes = DEFAULT_MAX_MB
    return max(0, int(megabytes * 1_000_000))


_sizes: dict[tuple[str, int], int] = {}  # (folder, inode) -> bytes, for the cache's rendered folders


def _folder_size(path: Path, inode: int) -> int:
    """The bytes under a cached server folder. A rendered folder is never changed once in place (it is renamed
    in whole, and replaced by another folder: another inode), so its size is walked once per process: pruning
    after each of 1,000 servers rendered walked every folder each time. Staging folders ('.' first) are
    walked each time, being written."""
    if path.name.startswith("."):
        return _size(path)
    key = (str(path), inode)
    if key not in _sizes:
        if len(_sizes) >= 100_000:
            _sizes.clear()
        _sizes[key] = _size(path)
    return _sizes[key]


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


@dataclass
class CachedServer:
    """One folder of the cache: its size and when it was last used."""

    path: Path
    size: int
    used: float


@dataclass
class Pruned:
    """What a pruning removed and what it kept."""

    removed: list[CachedServer] = field(default_factory=list)
    kept: list[CachedServer] = field(default_factory=list)

    @property
    def freed(self) -> int:
        return sum(c.size for c in self.removed)


def cached_servers() -> list[CachedServer]:
    """The cache's server folders (staging leftovers included), least recently used first."""
    root = cache_root()
    if not root.is_dir():
        return []
    found = []
    for path in root.iterdir():
        try:
            stat = path.stat()
        except OSError:
            continue
        if S_ISDIR(stat.st_mode):
            found.append(CachedServer(path, _folder_size(path, stat.st_ino), stat.st_mtime))
    return sorted(found, key=lambda c: c.used)


def prune_cache(max_bytes: int | None = None, *, keep: Path | None = None, in_use_s: float = IN_USE_S) -> Pruned:
    """Remove the least recently used cached servers until the cache holds at most `max_bytes` (default:
    max_cache_bytes()). Never removes `keep` nor a folder used in the last `in_use_s` seconds."""
    limit = max_cache_bytes() if max_bytes is None else max_bytes
    servers = cached_servers()
    total = sum(c.size for c in servers)
    now = time.time()
    result = Pruned()
    for cached in servers:
        protected = (keep is not None and cached.path == keep) or now - cached.used < in_use_s
        if total <= limit or protected:
            result.kept.append(cached)
            continue
        shutil.rmtree(cached.path, ignore_errors=True)
        if not cached.path.exists():
            forget(cached.path)
            total -= cached.size
            result.removed.append(cached)
        else:
            result.kept.append(cached)
    return result
