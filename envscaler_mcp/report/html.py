"""The HTML report of a run: one self-contained file (inline CSS, no external assets). Its one inline script
opens the episode a link points at; the "failures only" filter is CSS, so it works without scripts. Each
distinct system prompt is shown once, in a section of its own that the transcripts link to (report/prompts.py)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from envscaler_mcp._io import atomic_write_chunks
from envscaler_mcp._json import JSONObject
from envscaler_mcp.harness.config import RunManifest
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import REPORT_FILE, RunDir
from envscaler_mcp.report.labels import with_plan
from envscaler_mcp.report.prompts import PromptIndex
from envscaler_mcp.report.summary import RunSummary, summarize_run, write_summary
from envscaler_mcp.scenario.titles import shown_title

TEMPLATE_DIR = Path(__file__).parent / "templates"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _args(arguments: JSONObject) -> str:
    return json.dumps(arguments, ensure_ascii=False)


def _try_json(text: str) -> str:
    """Tool results are usually JSON: indent them for reading, leave anything else as it is."""
    try:
        return _pretty(json.loads(text))
    except (ValueError, TypeError):
        return text


def _anchor(result: Any) -> str:
    """The id of an episode's section: environment, scenario and trial, in characters safe in a URL."""
    return "ep-" + re.sub(r"[^A-Za-z0-9_.-]", "_", f"{result.env_id}--{result.scenario_id}--{result.trial}")


def _title(result: Any) -> str:
    """An episode's scenario title: the one recorded, else one derived from its task (imported scenarios
    had none before their import derived one), else its id."""
    return shown_title(result.title, result.task) or str(result.scenario_id)


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pretty=_pretty, pct=_pct, args=_args, try_json=_try_json, anchor=_anchor,
                       title=_title)
    return env


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """What the page's table of episodes shows of one episode, kept from the pass that summarizes the run: the
    table is written without reading the records again (the sections below it read each one once)."""

    env_id: str
    scenario_id: str
    trial: int
    title: str  # as the page shows it (`_title`: derived from the task when the record has none)
    status: str
    success: bool | None
    score: float | None
    state_check: str
    unexpected: int
    observation: str
    evidence: int
    steps: int
    tool_calls: int
    tool_errors: int
    latency_s: float

    @classmethod
    def of(cls, r: EpisodeResult) -> EpisodeRow:
        return cls(sys.intern(r.env_id), sys.intern(r.scenario_id), r.trial, _title(r), r.status, r.success,
                   r.score, r.state_check, len(r.unexpected_changes), r.observation.status,
                   len(r.observation.evidence), r.steps, r.tool_calls, r.tool_errors, r.latency_s)


class _Episodes:
    """A run's episodes in report order (environment, scenario, trial), read from results.jsonl one at a time
    when the page's sections iterate them: what is held is one EpisodeRow and byte offset per episode, never
    the records."""

    def __init__(self, run_dir: RunDir, agent: str, index: list[tuple[EpisodeRow, int]]) -> None:
        self._run_dir, self._agent = run_dir, agent
        ordered = sorted(index, key=lambda entry: (entry[0].env_id, entry[0].scenario_id, entry[0].trial))
        self.rows = [row for row, _ in ordered]
        self._offsets = [offset for _, offset in ordered]

    def __iter__(self) -> Iterator[EpisodeResult]:
        for offset in self._offsets:
            yield with_plan(self._run_dir.read_result_at(offset), self._agent)


@dataclass
class LoadedRun:
    """A run folder as the report needs it: its manifest, its summary, its episodes (read lazily) and the
    page's section of each, in the page's order (rendered from the episodes as they are read, or already
    rendered while the run was written: report/live.py)."""

    manifest: RunManifest
    summary: RunSummary
    episodes: Iterable[EpisodeResult]
    rows: Sequence[EpisodeRow]
    prompts: PromptIndex
    sections: Iterable[str] | None = None

    def page_sections(self) -> Iterable[str]:
        if self.sections is not None:
            return self.sections
        section = section_renderer()
        return (section(r, self.prompts) for r in self.episodes)


def section_renderer() -> Callable[[EpisodeResult, PromptIndex], str]:
    """The function rendering one episode's section of the page (templates/section.html.j2), given the run's
    prompt index (each distinct system prompt is shown once and linked from the sections)."""
    macro = _environment().get_template("section.html.j2").module.section  # type: ignore[attr-defined]
    return cast(Callable[[EpisodeResult, PromptIndex], str], macro)


def load_run(path: Path) -> LoadedRun:
    """Read a run folder in one pass over results.jsonl: the summary recomputed from the results, each
    episode's row of the page's table, and an index to read each record once more for its section when the
    page is written (memory bounded by the longest record, plus a row per episode)."""
    run_dir = RunDir(path)
    manifest = run_dir.read_manifest()
    index: list[tuple[EpisodeRow, int]] = []
    prompts = PromptIndex()

    def results() -> Iterator[EpisodeResult]:
        for offset, _, r in run_dir.scan_results():
            index.append((EpisodeRow.of(r), offset))
            prompts.add(r.env_id, r.messages)
            yield r

    summary = summarize_run(results(), manifest)
    episodes = _Episodes(run_dir, manifest.config.agent, index)
    return LoadedRun(manifest, summary, episodes, episodes.rows, prompts)


def finish_and_load(path: Path) -> LoadedRun:
    """`finish_run` and `load_run` in one pass over results.jsonl: summary.json written, the run loaded for
    its report."""
    run = load_run(path)
    write_summary(path, run.summary)
    return run


def generate_report(run: LoadedRun) -> Iterator[str]:
    """The report HTML of a loaded run, piece by piece (an episode's section at a time)."""
    summary = run.summary
    template = _environment().get_template("report.html.j2")
    return template.generate(
        manifest=run.manifest,
        summary=summary,
        rows=run.rows,
        sections=(Markup(text) for text in run.page_sections()),
        prompts=run.prompts,
        groups=[*summary.per_env, summary.overall] if len(summary.per_env) > 1 else summary.per_env,
    )


def render_report(path: Path) -> str:
    """The report HTML of the run in `path`."""
    return "".join(generate_report(load_run(path)))


def write_report(path: Path, out: Path | None = None, run: LoadedRun | None = None) -> Path:
    """Write RUN_DIR/report.html (or `out`) as it is rendered, and return its path. `run`: the run already
    loaded from `path`."""
    target = Path(out) if out else Path(path) / REPORT_FILE
    atomic_write_chunks(target, generate_report(run or load_run(path)))
    return target
