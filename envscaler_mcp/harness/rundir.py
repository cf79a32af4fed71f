"""The run folder: run.json, results.jsonl (append-only, every record fsync'd before it counts as finished),
isolation.jsonl while the run is under way, summary.json; resume rules."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel

from envscaler_mcp._io import (
    append_lines,
    atomic_write_json,
    iter_lines_at,
    jsonl_line,
    read_json,
    validate_model,
    write_jsonl_atomic,
)
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import RunManifest
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.isolation.report import IsolationReport

RUN_FILE = "run.json"
RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"
ERROR_LOG = "error.log"
ISOLATION_FILE = "isolation.jsonl"  # the isolation reports learnt during a run, folded into run.json at its end


class GroupAppender:
    """Appends records to a JSONL file off the event loop, every finished record on disk (fsync'd) before
    `append` returns. Records handed in while a write is running go out together in the next one (group
    commit): one fsync for many episodes, and the loop never waits on the disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pending: list[str] = []
        self._queued = 0  # lines handed in so far
        self._flushed = 0  # of which on disk
        self._lock = anyio.Lock()

    async def append(self, record: Any) -> None:
        """Append one record (a pydantic model is encoded by pydantic: the same JSON values as dumping it to a
        dict first, at a quarter of the CPU); returns once it is on disk (raises what the write raised)."""
        self._pending.append(record.model_dump_json() + "\n" if isinstance(record, BaseModel) else jsonl_line(record))
        self._queued += 1
        mine = self._queued
        async with self._lock:
            if self._flushed >= mine:  # an earlier holder wrote it with its batch
                return
            batch, self._pending, upto = self._pending, [], self._queued
            try:
                await anyio.to_thread.run_sync(append_lines, self.path, batch)
            except BaseException:
                self._pending[:0] = batch  # not written: the next holder tries them again
                raise
            self._flushed = upto


class RunDir:
    """One run's folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @property
    def results_path(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def manifest_path(self) -> Path:
        return self.path / RUN_FILE

    def has_results(self) -> bool:
        """True when the folder already holds episode results."""
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def write_manifest(self, manifest: RunManifest) -> None:
        """Write run.json atomically."""
        atomic_write_json(self.manifest_path, manifest.model_dump(mode="json"))

    def read_manifest(self) -> RunManifest:
        """Read run.json, with the isolation reports a run appended to isolation.jsonl and had not yet folded
        into it (a run killed before its end)."""
        if not self.manifest_path.exists():
            raise UsageError(f"{self.path} is not a run folder (no {RUN_FILE}); check the path")
        manifest = validate_model(RunManifest, read_json(self.manifest_path), path=self.manifest_path)
        manifest.isolation.update(self._appended_isolation())
        return manifest

    def append_isolation(self, reports: dict[str, IsolationReport]) -> None:
        """Record isolation reports learnt during the run: one line appended and fsync'd, so the cost does not
        grow with what run.json already holds (rewriting it for each of 1,000 environments did)."""
        path = self.path / ISOLATION_FILE
        line = jsonl_line({name: report.model_dump(mode="json") for name, report in reports.items()})
        if _ends_torn(path):  # a line cut short by a crash stays apart from this one
            line = "\n" + line
        append_lines(path, [line])

    def fold_isolation(self, manifest: RunManifest) -> None:
        """At the end of a run: write run.json with every isolation report, then drop isolation.jsonl."""
        appended = self.path / ISOLATION_FILE
        if appended.exists():
            manifest.isolation.update(self._appended_isolation())
            self.write_manifest(manifest)
            appended.unlink()

    def _appended_isolation(self) -> dict[str, IsolationReport]:
        path = self.path / ISOLATION_FILE
        if not path.exists():
            return {}
        reports: dict[str, IsolationReport] = {}
        for line in path.read_bytes().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash: no result was written after it
            for name, report in record.items():
                reports[name] = validate_model(IsolationReport, report, path=path)
        return reports

    def append(self, result: EpisodeResult) -> None:
        """Append one episode record and fsync it (encoded by pydantic, as GroupAppender does: the same JSON values
        as dumping it to a dict first, at a quarter of the CPU; a run on worker processes appends each here)."""
        append_lines(self.results_path, [result.model_dump_json() + "\n"])

    def appender(self) -> GroupAppender:
        """Appends episode records from async code, off the event loop, many per fsync."""
        return GroupAppender(self.results_path)

    def read_results(self, *, repair: bool = False) -> list[EpisodeResult]:
        """Every finished episode. A torn last line (a write cut short by a crash) is ignored, and with
        `repair` cut off the file so the next append starts on a clean line."""
        records: list[EpisodeResult] = []
        good_end = 0
        for _, end, record in self.scan_results():
            records.append(record)
            good_end = end
        if repair and self.results_path.exists() and good_end < self.results_path.stat().st_size:
            with open(self.results_path, "r+b") as f:
                f.truncate(good_end)
                f.flush()
                os.fsync(f.fileno())
        return records

    def scan_results(self) -> Iterator[tuple[int, int, EpisodeResult]]:
        """Every finished episode, read one line at a time (memory bounded by the longest line): (byte offset
        of its line, offset after it, record). A torn last line is ignored, as by read_results."""
        if not self.results_path.exists():
            return
        for line, start, raw in iter_lines_at(self.results_path):
            offset = start + len(raw)
            if not raw.strip():
                continue
            complete = raw.endswith(b"\n")
            try:
                record: Any = json.loads(raw)
            except json.JSONDecodeError:
                record = None
            if record is None or not complete:
                if not complete:  # the torn tail: only the last line can lack its newline
                    return
                raise UsageError(
                    f"{self.results_path}: line {line} is not valid JSON (byte {offset}); "
                    "the file was edited by hand? Fix or remove that line."
                )
            yield start, offset, validate_model(EpisodeResult, record, path=self.results_path, where=f"line {line}")

    def read_result_at(self, offset: int) -> EpisodeResult:
        """The episode whose line starts at byte `offset` (as scan_results gave it)."""
        with open(self.results_path, "rb") as f:
            f.seek(offset)
            return validate_model(EpisodeResult, json.loads(f.readline()), path=self.results_path,
                                  where=f"byte {offset}")

    def drop_infra_errors(self, records: list[EpisodeResult]) -> list[EpisodeResult]:
        """Rewrite results.jsonl (atomically) without its infra-error records; return the records kept."""
        kept = [r for r in records if r.status != "infra_error"]
        if len(kept) != len(records):
            write_jsonl_atomic(self.results_path, [r.model_dump(mode="json") for r in kept])
        return kept



def _ends_torn(path: Path) -> bool:
    """True when `path` ends in a line without its newline (a write cut short)."""
    try:
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:  # missing or empty
        return False


def check_resumable(old: RunManifest, new: RunManifest) -> None:
    """Refuse to resume when the configuration or the content hashes differ, naming what changed."""
    problems = []
    old_key, new_key = old.config.resume_key(), new.config.resume_key()
    for field in sorted(old_key.keys() | new_key.keys()):
        if old_key.get(field) != new_key.get(field):
            problems.append(f"option '{field}': was {old_key.get(field)!r}, now {new_key.get(field)!r}")
    for env in sorted(old.hashes.keys() | new.hashes.keys()):
        if old.hashes.get(env) != new.hashes.get(env):
            problems.append(
                f"environment '{env}': its environment, scenarios or validators changed since the run began"
            )
    if old.scenario_ids != new.scenario_ids and not problems:
        problems.append("the selected scenarios differ")
    if problems:
        raise UsageError(
            "cannot resume this run, it was started with something else:\n  - "
            + "\n  - ".join(problems)
            + "\nRun with the original options, or start a new run with another --out."
        )
