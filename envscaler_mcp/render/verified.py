"""A cached server's files checked against their digests once, then by what the kernel says of each file.

`eval` and the gate check a cached server before each start (render/cache.py `rendered`): every file its
manifest lists must be on disk with its sha256. Reading and hashing a server's files (about 0.6 MB with the
runtime's `.pyc` files) costs about 12 ms of the command's CPU, paid again by every run for every one of a
catalog's 1,000 environments. Once a folder's files have been hashed and found as listed, their stamps are
kept beside the cache (`<cache>/verified/<folder>.json`): device, inode, size, and the modification and
change times in nanoseconds of the manifest and of each file, with each file's digest. The next check
compares the stamps (a `stat` per file) and hashes again only when one differs.

What a stamp catches: a file written in place, truncated, replaced (another inode) or removed, even with its
modification time set back (`utime` itself sets the change time, which no process can set). What it does not:
bytes changed below the file system, which hashing at each start would catch and nothing writes. Servers run
under Landlock, which lets them read their folder only; a server without it (where the kernel lacks Landlock)
runs as a user that can write the cache, its manifests and these stamps alike, so the digests were no wall
against it before either. A stamps file that cannot be read or written is ignored: the files are hashed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from stat import S_ISREG

from envscaler_mcp._io import atomic_write_bytes
from envscaler_mcp.render.engine import MANIFEST, Fingerprint, digests_hold, listed_files

STAMPS_DIR = "verified"  # beside the cache's servers/ folder


def stamps_path(folder: Path) -> Path:
    """Where the stamps of a cached server folder are kept."""
    return folder.parent.parent / STAMPS_DIR / f"{folder.name}.json"


def checked_files(folder: Path, expected: Fingerprint) -> dict[str, str] | None:
    """`engine.verified_files` of a cached server folder: its files (relative path -> sha256) when it was
    rendered with `expected` and every file is as listed; None otherwise. Hashes the files only when their
    stamps differ from those kept when they were last found as listed."""
    files = listed_files(folder, expected)
    if files is None:
        return None
    before = _stamps(folder, files)
    if before is None:
        return None
    if _kept(folder) == before:
        return files
    if not digests_hold(folder, files):
        return None
    if _stamps(folder, files) == before:  # nothing changed while it was read: the stamps vouch for these bytes
        try:
            atomic_write_bytes(stamps_path(folder), json.dumps(before).encode(), durable=False)
        except OSError:
            pass
    return files


def forget(folder: Path) -> None:
    """Drop the stamps of a folder removed from the cache."""
    try:
        stamps_path(folder).unlink()
    except OSError:
        pass


def _stamps(folder: Path, files: dict[str, str]) -> dict[str, list[object]] | None:
    """{relative path: [digest, device, inode, size, mtime ns, ctime ns]} of the manifest and the files; None
    when one of them is missing or not a regular file."""
    out: dict[str, list[object]] = {}
    for rel, digest in ((MANIFEST, ""), *files.items()):
        try:
            st = os.stat(folder / rel)
        except OSError:
            return None
        if not S_ISREG(st.st_mode):
            return None
        out[rel] = [digest, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]
    return out


def _kept(folder: Path) -> object:
    try:
        return json.loads(stamps_path(folder).read_bytes())
    except (OSError, ValueError):
        return None
