"""A catalog environment's skeleton with its content hash, the hash worked out once per process for the same
file: `eval` needs both when it plans an environment (run.json records the hash) and again when it launches the
environment's server (the render's fingerprint), and hashing a skeleton (its canonical JSON) costs more than
reading it.

The hash is kept under the sha256 of the file's bytes, and the skeleton is parsed from those same bytes: a
skeleton is a function of its file, and its hash of the skeleton, so a kept hash is never another file's.
Each hash worked out is also written to the user cache (`<user cache>/skeleton-hashes/<code tag>/<sha256 of
the file>`), so that the next run plans a 1,000-environment catalog without hashing each 280 kB skeleton's
canonical JSON again (about 8 ms each, before any episode starts). The code tag is the sha256 of the modules
that define a skeleton and its canonical dump (and of pydantic's version): another version of them keeps its
own hashes. A kept file that cannot be read or is not a hash is ignored; the cache can be deleted at any time.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path

import pydantic

from envscaler_mcp import _json, _outcome, _usage
from envscaler_mcp._io import atomic_write_bytes, user_cache_dir, validate_model
from envscaler_mcp.catalog.store import SKELETON_FILE, load_skeleton, skeleton_path
from envscaler_mcp.skeleton import models
from envscaler_mcp.skeleton.models import EnvSkeleton

_MAX_KEPT = 16384  # about 100 bytes each: a catalog of 10,000 environments keeps every hash
_hashes: dict[bytes, str] = {}


def hashed_skeleton(env_id: str, root: Path | None = None) -> tuple[EnvSkeleton, str]:
    """`get_skeleton(env_id, root)` and its `content_hash()`."""
    path = skeleton_path(env_id, root)
    file = path / SKELETON_FILE if path.is_dir() else path
    try:
        data = file.read_bytes()
        parsed = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):  # missing, not UTF-8, not JSON: the loader's error names the file and why
        skeleton = load_skeleton(path)
        return skeleton, skeleton.content_hash()
    skeleton = validate_model(EnvSkeleton, parsed, path=file)
    digest = hashlib.sha256(data).digest()
    known = _hashes.get(digest)
    if known is None:
        if len(_hashes) >= _MAX_KEPT:
            _hashes.clear()
        stored = _stored(digest)
        known = None if stored is None else _read_hash(stored)
        if known is None:
            known = skeleton.content_hash()
            try:
                if stored is not None:
                    atomic_write_bytes(stored, known.encode(), durable=False)
            except OSError:  # an unwritable cache only makes the next run hash again
                pass
        _hashes[digest] = known
    return skeleton, known


_HASH = re.compile(r"[0-9a-f]{64}")


@cache
def code_tag() -> str | None:
    """sha256 of the code a skeleton's content hash depends on: its models and their canonical dump (None when
    their source cannot be read: nothing is then kept)."""
    digest = hashlib.sha256(pydantic.VERSION.encode())
    try:
        for module in (models, _json, _outcome, _usage):
            digest.update(b"\0" + Path(str(module.__file__)).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()[:24]


def _stored(digest: bytes) -> Path | None:
    tag = code_tag()
    return None if tag is None else user_cache_dir() / "skeleton-hashes" / tag / digest.hex()


def _read_hash(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, ValueError):
        return None
    return text if _HASH.fullmatch(text) else None
