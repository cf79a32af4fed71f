"""The HTML report of a run: one self-contained file (inline CSS, no external assets). Its one inline script
opens the episode a link points at; the "failures only" filter is CSS, so it works without scripts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from envscaler_mcp._io import atomic_write_text
from envscaler_mcp._json import JSONObject
from envscaler_mcp.harness.rundir import REPORT_FILE, RunDir
from envscaler_mcp.report.labels import with_plans
from envscaler_mcp.report.summary import FinishedRun, RunSummary, summarize_run
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


def load_run(path: Path, finished: FinishedRun | None = None) -> tuple[RunDir, Any, list[Any], RunSummary]:
    """Read a run folder: (run dir, manifest, episode results, summary recomputed from the results); `finished`:
    what finish_run's reading of it just gave (not read again)."""
    run_dir = RunDir(path)
    manifest = finished.manifest if finished else run_dir.read_manifest()
    results = with_plans(finished.results if finished else run_dir.read_results(), manifest.config.agent)
    summary = summarize_run(results, manifest)
    return run_dir, manifest, results, summary


def render_report(path: Path, finished: FinishedRun | None = None) -> str:
    """The report HTML of the run in `path` (`finished`: the run as read_and_finish just read it)."""
    _, manifest, results, summary = load_run(path, finished)
    results = sorted(results, key=lambda r: (r.env_id, r.scenario_id, r.trial))
    template = _environment().get_template("report.html.j2")
    return template.render(
        manifest=manifest,
        summary=summary,
        results=results,
        groups=[*summary.per_env, summary.overall] if len(summary.per_env) > 1 else summary.per_env,
    )


def write_report(path: Path, out: Path | None = None, *, finished: FinishedRun | None = None) -> Path:
    """Write RUN_DIR/report.html (or `out`) and return its path (`finished`: the run as read_and_finish just
    read it, so results.jsonl is not parsed twice)."""
    target = Path(out) if out else Path(path) / REPORT_FILE
    atomic_write_text(target, render_report(path, finished))
    return target
