"""The environment prompt's KV cache on disk, so a prompt is read once per (model, runtime, prompt) and not
once per episode or per run.

Before the first decision with a new system prompt, the server reads only that prompt's prefix (the chat
template's text up to where the user's message starts) and llama.cpp saves the slot's KV cache to
`<cache>/<key>.bin` (`POST /slots/0?action=save`). Later, in this process or the next, the file is restored
(`action=restore`, milliseconds) and the server's prefix matching then processes only the new tokens.

The key is the SHA-256 of the model file's hash, the runtime and its version, the server settings that shape
the cache (context size, KV cache types) and the exact prefix text. A sidecar `<key>.json` records those
fields and the `.bin` file's own SHA-256; a file whose sidecar is missing, unreadable, for another key or
whose bytes do not hash to the recorded value is ignored and deleted, and a file the server refuses is
ignored (the prompt is read again and saved anew). Files are written under a temporary name and renamed
into place, so a crash leaves no half-written entry. The folder is kept under `MAX_BYTES`, oldest first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1
MAX_BYTES = 2 << 30
MARK = "\u2063envscaler-user-message\u2063"


def prompt_cache_dir() -> Path | None:
    """$ENVSCALER_MCP_PROMPT_CACHE_DIR ('off' turns the cache off), else
    <$XDG_CACHE_HOME or ~/.cache>/envscaler-mcp/prompt-cache."""
    override = os.environ.get("ENVSCALER_MCP_PROMPT_CACHE_DIR")
    if override:
        return None if override.lower() == "off" else Path(override)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "envscaler-mcp" / "prompt-cache"


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """One prefix's KV cache: where it lives and what it must match."""

    directory: Path
    key: str
    fields: dict[str, Any]

    @property
    def bin_path(self) -> Path:
        """The llama.cpp slot file."""
        return self.directory / f"{self.key}.bin"

    @property
    def meta_path(self) -> Path:
        """The sidecar with the key's fields and the slot file's hash."""
        return self.directory / f"{self.key}.json"

    def valid(self) -> bool:
        """True when both files exist, the sidecar matches this key and the slot file hashes as recorded.
        Anything else (half-written, corrupt, another key's file under this name) is deleted."""
        if not self.bin_path.is_file() or not self.meta_path.is_file():
            self.discard()
            return False
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
            ok = (isinstance(meta, dict) and meta.get("key") == self.key and meta.get("fields") == self.fields
                  and meta.get("size") == self.bin_path.stat().st_size
                  and meta.get("sha256") == file_sha256(self.bin_path))
        except (OSError, ValueError):
            ok = False
        if not ok:
            self.discard()
            return False
        with contextlib.suppress(OSError):
            os.utime(self.meta_path)  # most recently used: pruned last
        return True

    def temp_name(self) -> str:
        """The file name the server saves to before it is checked and renamed into place."""
        return f"{self.key}.{os.getpid()}.tmp"

    def commit(self, tokens: int) -> bool:
        """Hash the freshly saved temporary file, write the sidecar and move both into place."""
        temp = self.directory / self.temp_name()
        if not temp.is_file():
            return False
        meta = {"format": FORMAT, "key": self.key, "fields": self.fields, "tokens": tokens,
                "size": temp.stat().st_size, "sha256": file_sha256(temp)}
        meta_temp = self.directory / f"{self.key}.{os.getpid()}.json.tmp"
        meta_temp.write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")
        os.replace(temp, self.bin_path)
        os.replace(meta_temp, self.meta_path)
        prune(self.directory)
        return True

    def discard(self) -> None:
        """Delete this entry's files (and a temporary file of this process)."""
        for path in (self.bin_path, self.meta_path, self.directory / self.temp_name()):
            with contextlib.suppress(OSError):
                path.unlink()


def cache_entry(directory: Path, *, model_sha256: str, runtime: str, settings: dict[str, Any],
                prefix: str) -> CacheEntry:
    """The entry of one prompt prefix for one model file, runtime version and server settings."""
    fields = {"format": FORMAT, "model_sha256": model_sha256, "runtime": runtime, "settings": settings,
              "prefix_sha256": hashlib.sha256(prefix.encode("utf-8")).hexdigest()}
    key = hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()
    return CacheEntry(directory=directory, key=key, fields=fields)


def prune(directory: Path, max_bytes: int = MAX_BYTES) -> None:
    """Delete the least recently used entries (and stale temporary files) until the folder fits `max_bytes`."""
    entries = []
    for meta in directory.glob("*.json"):
        data = directory / (meta.stem + ".bin")
        try:
            entries.append((meta.stat().st_mtime, meta, data, data.stat().st_size if data.exists() else 0))
        except OSError:
            continue
    total = sum(size for *_, size in entries)
    for _, meta, data, size in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        for path in (meta, data):
            with contextlib.suppress(OSError):
                path.unlink()
        total -= size


def split_prefix(templated: str) -> str | None:
    """The text before the user's message in a chat-templated prompt built with `MARK` as that message."""
    at = templated.find(MARK)
    return templated[:at] if at > 0 else None
