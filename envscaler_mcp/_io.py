"""File helpers: atomic writes and append-only JSONL, so a crash never leaves a half-written file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from envscaler_mcp.errors import InputFileError, UsageError

M = TypeVar("M", bound=BaseModel)

# ("write", path, text) for an atomic write, ("append", path, record) for a JSONL append
WriteOp = tuple[str, Path, Any]
_journal: ContextVar[list[WriteOp] | None] = ContextVar("envscaler_write_journal", default=None)


@contextmanager
def journal_writes() -> Iterator[list[WriteOp]]:
    """Record, in order, every atomic write and JSONL append made in this context (and the tasks it starts),
    so the same writes can be made again elsewhere (a Ray worker's finished item, written by the driver)."""
    ops: list[WriteOp] = []
    token = _journal.set(ops)
    try:
        yield ops
    finally:
        _journal.reset(token)


def replay_writes(ops: Iterable[WriteOp], root: Path) -> None:
    """Make recorded writes under `root` (paths relative to it), in their order."""
    for kind, rel, payload in ops:
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise ValueError(f"a recorded write outside its folder: {rel}")
        if kind == "write":
            atomic_write_text(root / rel, payload)
        else:
            append_jsonl(root / rel, payload)


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
    if (ops := _journal.get()) is not None:
        ops.append(("write", path, text))
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """atomic_write_text for bytes (not journaled: for caches, never for a stage's output). `durable=False` skips
    the fsync, for files that need only never be read half-written and die with their run (9 ms of a 1.3 MB
    file's 10 on an ext4 disk)."""
    _atomic_write(path, [data], durable=durable)


def atomic_write_chunks(path: Path, chunks: Iterable[str]) -> None:
    """atomic_write_text for text made piece by piece: each piece is written as it comes, so the whole text is
    never held (a report of any length). Journaled writes (a Ray worker's) are joined, as they must be kept."""
    path = Path(path)
    if (ops := _journal.get()) is not None:
        text = "".join(chunks)
        ops.append(("write", path, text))
        _atomic_write(path, [text.encode("utf-8")], durable=True)
        return
    _atomic_write(path, (chunk.encode("utf-8") for chunk in chunks), durable=True)


def _atomic_write(path: Path, chunks: Iterable[bytes], *, durable: bool) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = file_mode(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """`value` as the JSON text atomic_write_json writes (UTF-8 kept, trailing newline)."""
    return json.dumps(value, indent=indent, ensure_ascii=False) + "\n"


def jsonl_line(record: Any) -> str:
    """One line of a JSONL file as append_jsonl and write_jsonl_atomic write it."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def atomic_write_json(path: Path, value: Any, *, indent: int | None = 2) -> None:
    """Atomically write `value` as JSON (UTF-8, trailing newline)."""
    atomic_write_text(path, json_text(value, indent=indent))


class PendingFiles:
    """Files written piece by piece into temporary files beside them, put in place together by commit().

    Until commit() no target is touched; discard() (or leaving a `with` block by an exception) removes the
    temporary files and the folders made for them, so a failure leaves nothing half-written. Each file gets
    the mode atomic_write_text would give it.
    """

    def __init__(self) -> None:
        self._temps: dict[Path, Path] = {}
        self._made: list[Path] = []

    def append(self, path: Path, text: str) -> None:
        """Add `text` to the end of what will become `path`."""
        path = Path(path)
        tmp = self._temps.get(path)
        if tmp is None:
            missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
            path.parent.mkdir(parents=True, exist_ok=True)
            self._made.extend(missing)
            fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            os.close(fd)
            tmp = self._temps[path] = Path(name)
        with open(tmp, "a", encoding="utf-8", newline="\n") as f:
            f.write(text)

    def commit(self) -> None:
        """Flush every file to disk and rename each into place."""
        for path, tmp in self._temps.items():
            os.chmod(tmp, file_mode(path))
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
        for path, tmp in self._temps.items():
            os.replace(tmp, path)
        self._temps.clear()
        self._made.clear()

    def discard(self) -> None:
        """Remove the temporary files and the folders made for them (when empty)."""
        for tmp in self._temps.values():
            tmp.unlink(missing_ok=True)
        self._temps.clear()
        for folder in sorted(self._made, key=lambda p: len(p.parts), reverse=True):
            try:
                folder.rmdir()
            except OSError:
                pass
        self._made.clear()

    def __enter__(self) -> PendingFiles:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if error is not None:
            self.discard()


def append_jsonl(path: Path, record: Any) -> None:
    """Append one JSON record and flush it to disk (fsync), so finished work survives a crash."""
    path = Path(path)
    if (ops := _journal.get()) is not None:
        ops.append(("append", path, record))
    append_lines(path, [jsonl_line(record)])


def append_lines(path: Path, lines: list[str]) -> None:
    """Append whole lines (each ending in a newline) in one write, then fsync."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write("".join(lines).encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())


def read_text(path: Path) -> str:
    """A UTF-8 text file's text; a file that is not UTF-8 is an InputFileError naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at position "
                                   f"{exc.start}): is it the right file?") from exc


def read_json(path: Path) -> Any:
    """Read a JSON file, turning a syntax error into an error that names the file, line and column."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "file not found")
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from exc


def iter_lines_at(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset where it starts, line with its newline) of each line of a file, read one at a
    time: memory bounded by the longest line, and each line found again with a seek to its offset."""
    with open(path, "rb") as f:
        offset = 0
        for number, raw in enumerate(f, start=1):
            yield number, offset, raw
            offset += len(raw)


def iter_jsonl(path: Path, *, skip_torn_tail: bool = False) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record) for each non-empty line.

    With skip_torn_tail, a malformed *last* line (a write cut short by a crash) is skipped instead of raising.
    """
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "file not found")
    lines = read_text(path).splitlines()
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
    text = "".join(jsonl_line(r) for r in records)
    atomic_write_text(path, text)


def user_cache_dir() -> Path:
    """This program's cache folder: $ENVSCALER_MCP_CACHE_DIR, else <$XDG_CACHE_HOME or ~/.cache>/envscaler-mcp.
    Everything in it can be deleted at any time; it is rebuilt when needed."""
    explicit = os.environ.get("ENVSCALER_MCP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envscaler-mcp"


def check_writable_folder(path: Path, option: str = "--out", what: str = "the output folder") -> None:
    """Refuse a folder that cannot be created or written, before any work starts: a UsageError (one line)."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path}: a file is in the way; pass a folder")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create {what} ({parent} is not a writable folder)")


FileStamps = tuple[tuple[str, int, int, int], ...]


def file_stamps(paths: Iterable[Path]) -> FileStamps:
    """Each file's path with its inode, size and modification time (nanoseconds): the key of a value worked out
    from the files' bytes and kept per process. Equal stamps mean no file was replaced, rewritten in place,
    added or removed since."""
    return tuple((str(path), st.st_ino, st.st_size, st.st_mtime_ns) for path in paths for st in (path.stat(),))
