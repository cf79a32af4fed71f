"""File helpers: atomic writes and append-only JSONL, so a crash never leaves a half-written file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from envscaler_mcp.errors import InputFileError

M = TypeVar("M", bound=BaseModel)


def _umask() -> int:
    """The process's umask (read without changing it where /proc tells it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode(path: Path) -> int:
    """The mode a write to `path` should leave: an existing file's own, else what the umask gives a new file."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` via a temporary file and rename, creating parent folders. The file keeps its
    mode when it exists, else gets the one the user's umask gives (not the temporary file's 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = file_mode(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, value: Any, *, indent: int | None = 2) -> None:
    """Atomically write `value` as JSON (UTF-8, trailing newline)."""
    atomic_write_text(path, json.dumps(value, indent=indent, ensure_ascii=False) + "\n")


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON record and flush it to disk (fsync), so finished work survives a crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def read_json(path: Path) -> Any:
    """Read a JSON file, turning a syntax error into an error that names the file, line and column."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc


def iter_jsonl(path: Path, *, skip_torn_tail: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record) for each non-empty line.

    With skip_torn_tail, a malformed *last* line (a write cut short by a crash) is skipped instead of raising.
    """
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "file not found")
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield i, json.loads(line)
        except json.JSONDecodeError as exc:
            if skip_torn_tail and i == len(lines):
                return
            raise InputFileError(path, f"line {i} is not valid JSON: {exc.msg}") from exc


def validate_model(model: type[M], data: Any, *, path: object, where: str = "") -> M:
    """Validate `data` as `model`; on failure raise InputFileError naming file, field and expectation."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors()[:5]:
            loc = ".".join(str(p) for p in err["loc"]) or "(root)"
            problems.append(f"field '{loc}': {err['msg']}")
        more = f" (+{exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        prefix = f"{where}: " if where else ""
        raise InputFileError(path, f"{prefix}not a valid {model.__name__}: " + "; ".join(problems) + more) from exc


def write_jsonl_atomic(path: Path, records: Iterable[Any]) -> None:
    """Atomically replace `path` with one JSON record per line."""
    text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    atomic_write_text(path, text)


def user_cache_dir() -> Path:
    """This program's cache folder: $ENVSCALER_MCP_CACHE_DIR, else <$XDG_CACHE_HOME or ~/.cache>/envscaler-mcp.
    Everything in it can be deleted at any time; it is rebuilt when needed."""
    explicit = os.environ.get("ENVSCALER_MCP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envscaler-mcp"
