"""Load and save skeletons and scenario sets, with errors that name the file and field."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from envscaler_mcp._io import atomic_write_json, iter_jsonl, read_json, validate_model, write_jsonl_atomic
from envscaler_mcp._json import ParsedState, object_keeping
from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir
from envscaler_mcp.errors import InputFileError, UsageError
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scenario.titles import shown_title
from envscaler_mcp.skeleton.models import EnvSkeleton

SKELETON_FILE = "skeleton.json"


def load_skeleton(path: Path) -> EnvSkeleton:
    """Load a skeleton from a skeleton.json file or a folder containing one."""
    path = Path(path)
    if path.is_dir():
        path = path / SKELETON_FILE
    return validate_model(EnvSkeleton, read_json(path), path=path)


def skeleton_file(folder: Path, env_id: str) -> Path:
    """Where save_skeleton writes a skeleton: <folder>/<env id>/skeleton.json."""
    return Path(folder) / env_id / SKELETON_FILE


def save_skeleton(skeleton: EnvSkeleton, folder: Path) -> Path:
    """Atomically write <folder>/<env id>/skeleton.json and return its path."""
    path = skeleton_file(folder, skeleton.id)
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
    return load_skeleton(skeleton_path(env_id, root))


def skeleton_path(env_id: str, root: Path | None = None) -> Path:
    """The skeleton file or folder `get_skeleton` reads for `env_id`; UsageError naming the known ids when none."""
    candidate = Path(env_id)
    if candidate.suffix == ".json" or (candidate.is_dir() and (candidate / SKELETON_FILE).is_file()):
        return candidate
    root = root or environments_dir()
    folder = root / env_id
    if not (folder / SKELETON_FILE).is_file():
        known = ", ".join(list_env_ids(root)) or "(none)"
        raise UsageError(f"unknown environment '{env_id}'. Known environments: {known}. "
                         "Run `envscaler-mcp list` to see them, or pass a path to a skeleton.json.")
    return folder


def load_scenarios(path: Path) -> list[Scenario]:
    """Load a scenario set (JSONL, one Scenario per line)."""
    path = Path(path)
    return [validate_model(Scenario, rec, path=path, where=f"line {n}") for n, rec in iter_jsonl(path)]


def save_scenarios(scenarios: list[Scenario], path: Path, *, index: bool = False) -> None:
    """Atomically write a scenario set as JSONL; with `index`, also its catalog index (see scenario_index)."""
    path = Path(path)
    write_jsonl_atomic(path, [s.model_dump(mode="json") for s in scenarios])
    if index:
        write_index(path, scenarios)


INDEX_SUFFIX = ".index.json"


def index_path(path: Path) -> Path:
    """The catalog index beside a scenario file: scenarios/<env>.index.json."""
    return Path(path).with_suffix(INDEX_SUFFIX)


def _stamp(path: Path) -> list[int]:
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def index_row(s: Scenario) -> dict[str, object]:
    """A scenario's row in the catalog index."""
    return {"id": s.id, "title": shown_title(s.title, s.task), "checks": len(s.checklist),
            "solution_calls": len(s.reference_solution),
            "header": s.model_dump(mode="json", exclude={"initial_state"})}


def row_title(row: dict[str, object]) -> str:
    """The title to show for an index row: the scenario's, else one derived from its task (an index written
    before titles were derived holds the task's first 80 characters instead)."""
    header = row.get("header")
    if isinstance(header, dict) and isinstance(header.get("task"), str):
        return shown_title(str(header.get("title") or ""), header["task"])
    return str(row["title"])


def _index_rows(scenarios: list[Scenario]) -> list[dict[str, object]]:
    return [index_row(s) for s in scenarios]


def write_index(path: Path, scenarios: list[Scenario]) -> None:
    """Write the index of a scenario file just written: one row per scenario (id, title, counts, and the
    scenario without its initial state) and the file's size and modification time, so that `list`, `show`
    and a run's plan never parse the (possibly large) scenarios."""
    write_index_rows(path, _index_rows(scenarios))


def write_index_rows(path: Path, rows: list[dict[str, object]]) -> None:
    """Write the index of a scenario file just written from its rows (index_row of each scenario). Each row also
    gets where its line is and the line's sha256 (`line`: [offset, length, digest], read from the file now, once),
    so that a run's plan reads no scenario file at all (`scenario_headers`); when the file's lines do not match
    the rows one for one, no row gets one (the plan then reads and hashes the lines, as before)."""
    path = Path(path)
    lines = [(offset, len(raw), hashlib.sha256(raw).hexdigest()) for _, offset, raw in _lines(path)]
    if len(lines) == len(rows):
        rows = [{**row, "line": list(line)} for row, line in zip(rows, lines, strict=True)]
    atomic_write_json(index_path(path), {"file": _stamp(path), "scenarios": rows})


def _fresh_index(path: Path) -> list[dict[str, object]] | None:
    """The rows of the index beside `path` when it describes the file as it is now (same size and mtime)."""
    index = index_path(path)
    if not index.is_file():
        return None
    try:
        data = read_json(index)
    except UsageError:
        return None
    if isinstance(data, dict) and data.get("file") == _stamp(path) and isinstance(data.get("scenarios"), list):
        rows = list(data["scenarios"])
        if all(_is_row(row) for row in rows):
            return rows
    return None  # missing, stale or malformed (an imported folder's index is not trusted): parse the file


def _is_row(row: object) -> bool:
    """A row as write_index writes it: id and title text, checks and solution_calls counts."""
    return (isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("title"), str)
            and all(type(row.get(k)) is int and row[k] >= 0 for k in ("checks", "solution_calls")))


def scenario_index(path: Path) -> list[dict[str, object]]:
    """Rows (id, title, checks, solution_calls) of a scenario file: from its index when it is current,
    else by parsing the file. [] when the file does not exist."""
    path = Path(path)
    if not path.is_file():
        return []
    rows = _fresh_index(path)
    return rows if rows is not None else _index_rows(load_scenarios(path))


def count_scenarios(path: Path) -> int:
    """How many scenarios a file holds, from its index or by counting its non-empty lines (no parsing)."""
    path = Path(path)
    if not path.is_file():
        return 0
    rows = _fresh_index(path)
    if rows is not None:
        return len(rows)
    with path.open("rb") as f:
        return sum(1 for line in f if line.strip())


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


@dataclass(frozen=True)
class ScenarioLine:
    """Where a scenario sits in its JSONL file (byte offset and length of its line) and the line's sha256."""

    offset: int
    length: int
    digest: str


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, bytes) of each non-empty line, without decoding or parsing anything."""
    offset = 0
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            if raw.strip():
                yield number, offset, raw
            offset += len(raw)


def scenario_headers(
    path: Path, wanted: set[str] | None = None, limit: int | None = None, *, keep: bool = False
) -> list[tuple[Scenario, ScenarioLine]]:
    """The scenarios of a JSONL file without their initial states (left empty), each with where its line is,
    for loading it in full later (`load_scenario_line`): `wanted` ids (in file order), then the first `limit`.
    With a current catalog index the selection and the scenarios come from it and no line is parsed (each
    selected line is only hashed); without one, the selected lines are parsed, their states dropped at once,
    or with `keep` (a run about to play them) each selected scenario is kept in full among those read lately,
    as `load_scenario_line` keeps what it reads, up to half of their bound (the rest stays for episodes still
    running): its episodes then find it there instead of parsing its line a second time."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(path, "file not found")
    rows = _fresh_index(path)
    placed = _placed_rows(rows) if rows is not None else None
    if placed is not None:  # the index has every scenario and where its line is: no line is read or parsed
        return _from_index(path, placed, wanted, limit)
    ids = [str(r.get("id") or "") for r in rows] if rows is not None else None
    if ids is not None and not all(ids):
        ids = None  # scenarios without ids get theirs from their content: parse them
    out: list[tuple[Scenario, ScenarioLine]] = []
    kept = 0  # bytes of lines kept in full by this call (`keep`)
    position = -1
    for number, offset, raw in _lines(path):
        position += 1
        if limit is not None and len(out) >= limit:
            break
        if ids is not None and position < len(ids) and wanted is not None and ids[position] not in wanted:
            continue
        row = rows[position] if ids is not None and rows is not None and position < len(rows) else None
        header = row.get("header") if row is not None else None
        full: Scenario | None = None
        if isinstance(header, dict) and header.get("id"):  # the index has it: the line is not parsed
            scenario = _header(path, header, position)
        else:
            # at most half the bound: the lines the previous environment's episodes still use stay kept
            full = _in_full(raw, path, number) if keep and kept + len(raw) <= _RECENT.max_bytes // 2 else None
            if full is None:
                try:
                    record = json.loads(raw)
                except ValueError as exc:
                    raise InputFileError(path, f"line {number} is not valid JSON: {exc}") from exc
                scenario = validate_model(Scenario, record, path=path, where=f"line {number}")
                scenario = scenario if scenario.id else scenario.with_id()
            else:
                scenario = full
            scenario = scenario.model_copy(update={"initial_state": {}})
        if wanted is not None and scenario.id not in wanted:
            continue
        line = ScenarioLine(offset, len(raw), hashlib.sha256(raw).hexdigest())
        if full is not None:
            _RECENT.put((str(path), line.offset, line.digest), full, line.length)
            kept += line.length
        out.append((scenario, line))
    return out


def _placed_rows(rows: list[dict[str, object]]) -> list[tuple[dict[str, Any], ScenarioLine]] | None:
    """Each row's header and line place, when every row of a current index has both (`write_index_rows`); None
    otherwise. A place is only where to look: the line read for an episode is checked against its digest
    (`load_scenario_line`), so a file changed behind an index that still looks current is refused, never used."""
    placed = []
    for row in rows:
        header, line = row.get("header"), row.get("line")
        if not (isinstance(header, dict) and header.get("id") and isinstance(line, list) and len(line) == 3):
            return None
        offset, length, digest = line
        if not (type(offset) is int and type(length) is int and offset >= 0 and length > 0
                and isinstance(digest, str) and len(digest) == 64):
            return None
        placed.append((header, ScenarioLine(offset, length, digest)))
    return placed


def _from_index(path: Path, placed: list[tuple[dict[str, Any], ScenarioLine]], wanted: set[str] | None,
                limit: int | None) -> list[tuple[Scenario, ScenarioLine]]:
    """scenario_headers from a current index's rows alone (`wanted` ids in file order, then the first `limit`)."""
    out: list[tuple[Scenario, ScenarioLine]] = []
    for position, (header, line) in enumerate(placed):
        if limit is not None and len(out) >= limit:
            break
        if wanted is not None and header["id"] not in wanted:
            continue
        out.append((_header(path, header, position), line))
    return out


def _header(path: Path, header: dict[str, Any], position: int) -> Scenario:
    """The scenario of an index row's header (position 0-based), without its initial state."""
    return validate_model(Scenario, {**header, "initial_state": {}}, path=index_path(path), where=f"row {position + 1}")


def _in_full(raw: bytes, path: Path, number: int) -> Scenario | None:
    """The scenario of one line in full, as `load_scenario_line` reads it (its initial state keeping its text);
    None when the line is no scenario (read again the usual way, which names the problem)."""
    try:
        scenario = scenario_keeping_state(raw.decode("utf-8"), path=path, where=f"line {number}")
    except (ValueError, InputFileError):
        return None
    return scenario if scenario.id else scenario.with_id()


class _Recent:
    """Scenarios read in full lately, up to a total of line bytes (a run's trials of one scenario read it once,
    and its first trial finds it as the run's listing of the environment read it; a 154 MB import still never
    sits in memory whole). Kept scenarios are shared: nobody changes one."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[str, int, str], tuple[Scenario, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # a run reads the next environment's lines in a thread (scenario_headers)

    def get(self, key: tuple[str, int, str]) -> Scenario | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            self._kept.move_to_end(key)
            return found[0]

    def put(self, key: tuple[str, int, str], scenario: Scenario, size: int) -> None:
        if size > self.max_bytes // 4:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._kept[key] = (scenario, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped


_RECENT = _Recent(4 << 20)


def load_scenario_line(path: Path, line: ScenarioLine, scenario_id: str) -> Scenario:
    """The scenario at `line` of `path`, in full; UsageError when the file changed since it was read. A line
    read lately (the same file, place and digest) is not read again."""
    path = Path(path)
    key = (str(path), line.offset, line.digest)  # a plan names its file one way: no path resolved per episode
    kept = _RECENT.get(key)
    if kept is not None:
        return kept
    scenario = _read_scenario_line(path, line, scenario_id)
    _RECENT.put(key, scenario, line.length)
    return scenario


def _read_scenario_line(path: Path, line: ScenarioLine, scenario_id: str) -> Scenario:
    try:
        with path.open("rb") as f:
            f.seek(line.offset)
            raw = f.read(line.length)
    except OSError as exc:
        raise InputFileError(path, f"cannot read it ({exc.strerror or exc})") from exc
    if hashlib.sha256(raw).hexdigest() != line.digest:
        index = index_path(path)
        since = f" or since its index {index.name} was written (remove the index if the file was edited by hand)" \
            if index.is_file() else ""
        raise UsageError(f"{path} changed while the run was using it{since}: scenario {scenario_id} is no longer "
                         "where it was; run again")
    try:
        text = raw.decode("utf-8")
        del raw  # not held while the text is parsed (a 3 MB line: 3 MB of bytes, up to 12 MB of text, 20 MB parsed)
        scenario = scenario_keeping_state(text, path=path)
    except ValueError as exc:
        raise InputFileError(path, f"the line of scenario {scenario_id} is not valid JSON: {exc}") from exc
    return scenario if scenario.id else scenario.with_id()


def scenario_keeping_state(text: str, *, path: Path, where: str = "") -> Scenario:
    """The scenario of one JSON line, its initial state a ParsedState holding its text as read: sent to a
    server or the validators as it is, never encoded again nor remembered by the process's cache of encoded
    states (which keeps what it remembers alive: ~10x the text in objects). ValueError when the line is not a
    JSON object; InputFileError (naming `path` and `where`) when it is no scenario."""
    record = object_keeping(text, "initial_state")
    scenario = validate_model(Scenario, record, path=path, where=where)
    state = record.get("initial_state")
    if isinstance(state, ParsedState):  # validation copied it into a plain dict: keep the one with its text
        scenario = scenario.model_copy(update={"initial_state": state})
    return scenario


class StoredScenarios(Sequence[Scenario]):
    """The scenarios of a JSONL file, each read in full from its line when reached: going through them holds
    one scenario at a time (rendering a server whose scenarios carry megabytes of state each). The listing
    itself comes from the catalog index when it is current (scenario_headers)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._rows = scenario_headers(self.path) if self.path.is_file() else []

    def __len__(self) -> int:
        return len(self._rows)

    def headers(self) -> list[Scenario]:
        """The scenarios without their initial states (from the index when current: no line parsed)."""
        return [header for header, _ in self._rows]

    @overload
    def __getitem__(self, index: int) -> Scenario: ...

    @overload
    def __getitem__(self, index: slice) -> list[Scenario]: ...

    def __getitem__(self, index: int | slice) -> Scenario | list[Scenario]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        header, line = self._rows[index]
        return load_scenario_line(self.path, line, header.id)
