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

`skeleton_facts` goes one step further for what planning and launching need of a skeleton (its id, what the
agent is told, its free fields, its success convention, whether it is hand-authored, its hash): kept the same
way (`<user cache>/skeleton-facts/<code tag>/<sha256 of the file>.json`), so that neither reads the 280 kB
skeleton's JSON again (2-4 ms each, twice per environment of a run). The skeleton itself is read only when a
server must be rendered, or when the kept facts say its code is hand-authored (trusted: its episodes then share
one process), which is confirmed from the skeleton itself: a file planted in the cache cannot lift an imported
environment's isolation.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import cache
from pathlib import Path

import pydantic
from pydantic import BaseModel

from envscaler_mcp import _json, _outcome, _usage
from envscaler_mcp._io import atomic_write_bytes, user_cache_dir, validate_model
from envscaler_mcp._outcome import SuccessConvention
from envscaler_mcp.catalog.store import SKELETON_FILE, load_skeleton, skeleton_path
from envscaler_mcp.skeleton import models
from envscaler_mcp.skeleton.models import EnvSkeleton, FreeField

_MAX_KEPT = 16384  # about 100 bytes each: a catalog of 10,000 environments keeps every hash
_hashes: dict[bytes, str] = {}


class SkeletonFacts(BaseModel):
    """What a run needs of an environment's skeleton until its server must be rendered."""

    id: str
    name: str
    introduction: str
    rules: list[str]
    free_fields: list[FreeField]
    success_convention: SuccessConvention
    source: str  # provenance.source ("hand-authored" code is trusted)
    content_hash: str

    @classmethod
    def of(cls, skeleton: EnvSkeleton, content_hash: str) -> SkeletonFacts:
        return cls(id=skeleton.id, name=skeleton.name, introduction=skeleton.introduction, rules=skeleton.rules,
                   free_fields=skeleton.free_fields, success_convention=skeleton.success_convention,
                   source=skeleton.provenance.source, content_hash=content_hash)


_facts: dict[bytes, SkeletonFacts] = {}


def skeleton_facts(env_id: str, root: Path | None = None) -> SkeletonFacts:
    """The SkeletonFacts of `get_skeleton(env_id, root)`, read from the user cache when this file's were kept
    (the same errors as the loader's when the skeleton cannot be read)."""
    file = _file(env_id, root)
    try:
        data = file.read_bytes()
    except OSError:
        skeleton, content_hash = hashed_skeleton(env_id, root)  # the loader's error, naming the file and why
        return SkeletonFacts.of(skeleton, content_hash)
    digest = hashlib.sha256(data).digest()
    facts = _facts.get(digest)
    if facts is not None:
        return facts
    stored = _stored(digest, "skeleton-facts")
    facts = None if stored is None else _read_facts(stored.with_suffix(".json"))
    if facts is not None and facts.source == "hand-authored":
        facts = None  # trust is never taken from the cache: a kept file cannot lift an environment's isolation
    if facts is None:
        skeleton, content_hash = _hashed(env_id, root, file, data, digest)
        facts = SkeletonFacts.of(skeleton, content_hash)
        if stored is not None:
            try:
                atomic_write_bytes(stored.with_suffix(".json"), facts.model_dump_json().encode(), durable=False)
            except OSError:  # an unwritable cache only makes the next run read the skeleton again
                pass
    if len(_facts) >= _MAX_KEPT:
        _facts.clear()
    _facts[digest] = facts
    return facts


def _read_facts(path: Path) -> SkeletonFacts | None:
    try:
        return SkeletonFacts.model_validate_json(path.read_bytes())
    except (OSError, ValueError):  # missing, unreadable, or not facts (pydantic's ValidationError is a ValueError)
        return None


def _file(env_id: str, root: Path | None) -> Path:
    path = skeleton_path(env_id, root)
    return path / SKELETON_FILE if path.is_dir() else path


def hashed_skeleton(env_id: str, root: Path | None = None) -> tuple[EnvSkeleton, str]:
    """`get_skeleton(env_id, root)` and its `content_hash()`."""
    file = _file(env_id, root)
    try:
        data = file.read_bytes()
    except OSError:  # missing: the loader's error names the file and why
        skeleton = load_skeleton(skeleton_path(env_id, root))
        return skeleton, skeleton.content_hash()
    return _hashed(env_id, root, file, data, hashlib.sha256(data).digest())


def _hashed(env_id: str, root: Path | None, file: Path, data: bytes, digest: bytes) -> tuple[EnvSkeleton, str]:
    """The skeleton of `file`'s bytes `data` (sha256 `digest`) and its content hash."""
    try:
        parsed = json.loads(data.decode("utf-8"))
    except ValueError:  # not UTF-8, not JSON: the loader's error names the file and why
        skeleton = load_skeleton(skeleton_path(env_id, root))
        return skeleton, skeleton.content_hash()
    skeleton = validate_model(EnvSkeleton, parsed, path=file)
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
        for module in (models, _json, _outcome, _usage, sys.modules[__name__]):  # this one: SkeletonFacts
            digest.update(b"\0" + Path(str(module.__file__)).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()[:24]


def _stored(digest: bytes, kind: str = "skeleton-hashes") -> Path | None:
    tag = code_tag()
    return None if tag is None else user_cache_dir() / kind / tag / digest.hex()


def _read_hash(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, ValueError):
        return None
    return text if _HASH.fullmatch(text) else None
