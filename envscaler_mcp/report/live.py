"""A run's report built while the run is written: `eval` hands each finished episode's record here as the harness
appends it to results.jsonl (`run_eval(on_result=...)`), and its summary, its row of the page's table, its system
prompt and its section of the page are made then. At the end the page is written from those, without reading
results.jsonl again: over 10,000 episodes, reading every record twice and rendering every section after the last
episode took 13 s, with one core of two idle (benchmarks/README.md).

What is held is what the page written from results.jsonl holds (report/html.py `load_run`: the aggregates, a
row per episode, the distinct prompts); the rendered sections wait in an unnamed temporary file beside the
run's files, removed with it, and are copied into the page in its order. The page is the same, byte for byte, as
the one `envscaler-mcp report` renders from results.jsonl (tests/report/test_live_report.py); where it could not
be, `finish` says so (None) and the page is rendered from results.jsonl as before: a resumed run (records
this process did not see), a section that could not be rendered, a count of records that differs from the
file's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.report.html import EpisodeRow, LoadedRun, section_renderer
from envscaler_mcp.report.labels import with_plan
from envscaler_mcp.report.prompts import PromptIndex
from envscaler_mcp.report.summary import Summarizer, run_summary


class LiveReport:
    """The report of the run being written into `folder` by an agent named `agent`: `add` each record in the
    order it is appended, then `finish`; `close` (or the context) removes the rendered sections."""

    def __init__(self, folder: Path, agent: str) -> None:
        self._agent = agent
        self._summarizer = Summarizer()
        self._prompts = PromptIndex()
        self._rows: list[tuple[EpisodeRow, int, int]] = []  # the row, its section's offset and length
        self._section = section_renderer()
        self._folder = folder
        self._spool: IO[bytes] | None = None  # made with the first record (the run folder exists by then)
        self._failed = False
        self._size = 0
        self._added = 0

    def __enter__(self) -> LiveReport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, result: EpisodeResult) -> None:
        """One finished episode, in the order of results.jsonl. Never raises: a section that cannot be rendered
        (or a spool that cannot be written) leaves the page to be rendered from results.jsonl."""
        self._added += 1
        if self._failed:
            return
        try:
            if self._spool is None:
                self._spool = tempfile.TemporaryFile(dir=self._folder)
            self._summarizer.add(result)
            self._prompts.add(result.env_id, result.messages)
            text = self._section(with_plan(result, self._agent), self._prompts).encode("utf-8")
            self._spool.write(text)
            self._rows.append((EpisodeRow.of(result), self._size, len(text)))
            self._size += len(text)
        except Exception:  # the page is then rendered from results.jsonl, as without a live report
            self._failed = True
            self.close()

    def finish(self, path: Path) -> LoadedRun | None:
        """The run in `path` as its page needs it, the sections already rendered; None when what was added is
        not what results.jsonl holds (then `html.finish_and_load` reads it)."""
        run_dir = RunDir(path)
        if self._failed or _records(run_dir.results_path) != self._added:
            return None
        ordered = sorted(self._rows, key=lambda entry: (entry[0].env_id, entry[0].scenario_id, entry[0].trial))
        manifest = run_dir.read_manifest()
        sections = () if self._spool is None else _sections(self._spool, [(at, size) for _, at, size in ordered])
        return LoadedRun(manifest, run_summary(self._summarizer, manifest), episodes=(),
                         rows=[row for row, _, _ in ordered], prompts=self._prompts, sections=sections)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None


def _sections(spool: IO[bytes], places: list[tuple[int, int]]) -> Iterator[str]:
    """The spooled sections at `places`, one at a time."""
    spool.flush()
    for offset, size in places:
        spool.seek(offset)
        yield spool.read(size).decode("utf-8")


def _records(path: Path) -> int:
    """How many records results.jsonl holds (its newlines: every record ends with one, and a finished run
    has no torn last line)."""
    count = 0
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                count += block.count(b"\n")
    except FileNotFoundError:
        return 0
    return count
