"""A catalog environment's skeleton with its content hash, the hash worked out once per process for the same
file: `eval` needs both when it plans an environment (run.json records the hash) and again when it launches the
environment's server (the render's fingerprint), and hashing a skeleton (its canonical JSON) costs more than
reading it.

The hash is kept under the sha256 of the file's bytes, and the skeleton is parsed from those same bytes: a
skeleton is a function of its file, and its hash of the skeleton, so a kept hash is never another file's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from envscaler_mcp._io import validate_model
from envscaler_mcp.catalog.store import SKELETON_FILE, load_skeleton, skeleton_path
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
        known = _hashes[digest] = skeleton.content_hash()
    return skeleton, known
