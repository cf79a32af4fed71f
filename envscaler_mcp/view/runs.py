"""Reading run folders for the viewer, tolerantly: a torn or unreadable line, a missing run.json or
summary.json is reported beside what could be read, never an error. Nothing here writes to a run folder."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envscaler_mcp.harness.config import RunManifest
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import RESULTS_FILE, RUN_FILE, SUMMARY_FILE
from envscaler_mcp.report.summary import RunSummary, summarize_run


@dataclass
class Lines:
    """The readable episodes of results.jsonl from a line on, and what could not be read."""

    episodes: list[EpisodeResult] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)  # "line N: why"
    next_line: int = 0  # the first line not yet read completely (a torn tail is read again later)


def read_lines(path: Path, start: int = 0) -> Lines:
    """Episodes of `path` (results.jsonl) from line index `start`; a last line without its newline is a write
    in progress: left for the next read."""
    out = Lines(next_line=start)
    try:
        data = path.read_bytes()
    except OSError:
        return out
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    for index in range(start, len(complete)):
        raw = complete[index]
        out.next_line = index + 1
        if not raw.strip():
            continue
        try:
            out.episodes.append(EpisodeResult.model_validate_json(raw))
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"msg": str(exc)}
            out.bad.append(f"line {index + 1}: {first.get('msg', 'not an episode record')}")
    if tail.strip():
        out.bad.append(f"line {len(complete) + 1}: incomplete (being written, or cut short)")
    return out


@dataclass
class Run:
    """One run folder as the viewer shows it."""

    name: str
    path: Path
    manifest: RunManifest | None = None
    episodes: list[EpisodeResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    summary: RunSummary | None = None
    finished: bool = False  # summary.json written


def load_run(name: str, path: Path) -> Run:
    """Read a run folder (see the module docstring)."""
    run = Run(name=name, path=path)
    try:
        run.manifest = RunManifest.model_validate_json((path / RUN_FILE).read_bytes())
    except OSError:
        run.problems.append(f"no {RUN_FILE}: not a complete run folder")
    except ValidationError as exc:
        run.problems.append(f"{RUN_FILE} is not readable: {exc.errors()[0]['msg'] if exc.errors() else exc}")
    lines = read_lines(path / RESULTS_FILE)
    run.episodes = lines.episodes
    run.problems += [f"{RESULTS_FILE} {why}" for why in lines.bad]
    run.finished = (path / SUMMARY_FILE).is_file()
    if not run.finished:
        run.problems.append(f"no {SUMMARY_FILE} yet: the run is still going, or was interrupted")
    if run.manifest is not None:
        try:
            run.summary = summarize_run(run.episodes, run.manifest)
        except (ValueError, ZeroDivisionError) as exc:  # a manifest that does not fit its results
            run.problems.append(f"cannot summarize: {exc}")
    return run


def find_runs(roots: list[Path]) -> dict[str, Path]:
    """Run folders under each root (a root may itself be a run folder), by a name unique among them."""
    found: list[Path] = []
    for root in roots:
        if (root / RUN_FILE).is_file() or (root / RESULTS_FILE).is_file():
            found.append(root)
        elif root.is_dir():
            found += sorted(p for p in root.iterdir() if p.is_dir() and ((p / RUN_FILE).is_file()
                                                                        or (p / RESULTS_FILE).is_file()))
    names: dict[str, Path] = {}
    for path in found:
        name = path.name
        if name in names and names[name] != path:
            name = f"{path.parent.name}-{path.name}"
        names[name] = path
    return names


def refused(content: str) -> bool:
    """A tool result that is a business refusal ({"success": false, ...}) although not an error result."""
    try:
        value = json.loads(content)
    except (TypeError, ValueError):
        return False
    return isinstance(value, dict) and value.get("success") is False


def failing_kinds(result: EpisodeResult) -> list[str]:
    """Why an episode did not succeed, as check kinds: checklist, transcript, state, turn, status."""
    kinds = []
    if result.status == "infra_error":
        return ["infra"]
    if any(c.status in ("fail", "error") and c.kind == "state" for c in result.checks):
        kinds.append("checklist")
    if any(c.status in ("fail", "error") and c.kind == "transcript" for c in result.checks):
        kinds.append("transcript")
    if result.state_check == "fail":
        kinds.append("state")
    if any(t.state_check == "fail" for t in result.turns[:-1]):
        kinds.append("turn")
    if result.status != "completed":
        kinds.append(result.status)
    return kinds


def episode_row(index: int, result: EpisodeResult) -> dict[str, Any]:
    """One line of the run page's table (also its JSON)."""
    return {"index": index, "env": result.env_id, "scenario": result.scenario_id, "title": result.title,
            "trial": result.trial, "status": result.status, "success": result.success, "score": result.score,
            "state_check": result.state_check, "failing": failing_kinds(result),
            "tools": sorted({m.name or "" for m in result.messages if m.role == "tool"}),
            "steps": result.steps, "latency_s": result.latency_s, "task": result.task[:300]}


def failure_breakdown(run: Run) -> dict[str, Any]:
    """Episodes that did not succeed, counted by failing check kind, and their error or refused tool calls by
    tool."""
    kinds: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    failed = [r for r in run.episodes if r.success is not True]
    for result in failed:
        kinds.update(failing_kinds(result))
        tools.update(m.name or "?" for m in result.messages
                     if m.role == "tool" and (m.is_error or refused(m.content)))
    return {"episodes": len(run.episodes), "not_succeeded": len(failed),
            "by_kind": dict(kinds.most_common()), "by_tool": dict(tools.most_common())}


def compare_runs(a: Run, b: Run) -> list[dict[str, Any]]:
    """Scenario by scenario: the success rate over trials in each run, and which flipped."""
    def rates(run: Run) -> dict[tuple[str, str], tuple[float | None, str]]:
        groups: dict[tuple[str, str], list[EpisodeResult]] = {}
        for r in run.episodes:
            groups.setdefault((r.env_id, r.scenario_id), []).append(r)
        out = {}
        for key, rs in groups.items():
            scored = [r for r in rs if r.success is not None]
            out[key] = (sum(bool(r.success) for r in scored) / len(scored) if scored else None, rs[0].title)
        return out

    ra, rb = rates(a), rates(b)
    rows = []
    for key in sorted(set(ra) | set(rb)):
        sa, sb = ra.get(key, (None, ""))[0], rb.get(key, (None, ""))[0]
        flip = ""
        if sa is not None and sb is not None:
            flip = "fixed" if sb > sa else "broke" if sb < sa else ""
        title = (ra.get(key) or rb.get(key) or (None, ""))[1]
        rows.append({"env": key[0], "scenario": key[1], "title": title, "a": sa, "b": sb, "flip": flip,
                     "only": "a" if key not in rb else "b" if key not in ra else ""})
    return rows
