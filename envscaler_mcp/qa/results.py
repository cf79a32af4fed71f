"""The gate's results file: one JSON line per scenario, appended (and fsync'd) as each is judged, so a large
gate can be stopped and resumed (`scenarios check --results FILE --resume`): a scenario whose line is there is
not judged again.

A line is the scenario's report as `scenarios check --json` prints it ({...report, "passed": bool}). Locally
the gate appends each line as the report is done; on Ray (adapters/ray_gate.py) a worker's line comes back to
the driver, which appends it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._io import append_jsonl, iter_lines_at, validate_model
from envscaler_mcp.errors import InputFileError, UsageError
from envscaler_mcp.qa.batch import Group, Item, StoredScenario
from envscaler_mcp.qa.gate import GateReport, StepStatus

Key = tuple[str, str]  # (env id, scenario id)


def report_line(report: GateReport) -> dict[str, Any]:
    """The JSON line of a report (as `--json` prints it)."""
    return {**report.model_dump(mode="json"), "passed": report.passed}


def item_key(item: Item) -> Key:
    """The (env id, scenario id) of a scenario to gate."""
    scenario = item.header if isinstance(item, StoredScenario) else item
    return scenario.env_id, scenario.id


def report_counts(report: GateReport) -> dict[str, int]:
    """One report's share of the gate's totals: its mutation probes, wrong-solution probes and given wrong
    solutions (summed over the scenarios by `scenarios check`)."""
    probes = report.mutation.probes if report.mutation else []
    wrong = report.wrong_probes.probes if report.wrong_probes else []
    given = report.wrong_solutions
    return {
        "probes": len(probes),
        "caught_by_validators": sum(1 for p in probes if p.caught_by),
        "caught_by_state_check_only": sum(1 for p in probes if p.unexpected and not p.caught_by),
        "skipped_free": sum(1 for p in probes if p.skipped),
        "uncaught": len(report.mutation.uncaught) if report.mutation else 0,
        "collateral_probes": sum(1 for p in probes if p.collateral),
        "wrong_probes": sum(1 for p in wrong if p.skipped is None),
        "wrong_probes_uncaught": len(report.wrong_probes.uncaught) if report.wrong_probes else 0,
        "wrong_probes_skipped": sum(1 for p in wrong if p.skipped),
        "given_wrong_solutions": len(given),
        "given_wrong_solutions_uncaught": sum(1 for w in given if not w.caught),
        "state_check_not_available": 1 if report.state_check else 0,
        "scenarios": 1,
        "scenarios_passed": 1 if report.passed else 0,
    }


@dataclass(frozen=True)
class Verdict:
    """What the gate's table, notes and totals show of one judged scenario, and where its full line is in the
    results file (read again only for --json): kept per scenario instead of its report, whose states, replay
    and probes are tens of kB."""

    env_id: str
    scenario_id: str
    title: str
    passed: bool
    n_checks: int
    statuses: dict[str, StepStatus]
    reasons: tuple[str, ...]
    counts: dict[str, int]
    offset: int

    @classmethod
    def of(cls, report: GateReport, offset: int) -> Verdict:
        return cls(report.env_id, report.scenario_id, report.title, report.passed, report.n_checks,
                   {s.name: s.status for s in report.steps}, tuple(report.reasons()), report_counts(report), offset)


class ResultsFile:
    """A gate's JSONL results file: a verdict of each scenario judged so far, and each new one appended."""

    def __init__(self, path: Path, *, resume: bool) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(f"--results {path}: a folder; give a file (JSONL)")
        if not resume and self.path.is_file() and self.path.stat().st_size:
            raise UsageError(f"--results {path}: already holds results; pass --resume to judge only the scenarios "
                             "not in it, or give another file")
        self.judged: dict[Key, Verdict] = self._read() if resume and self.path.is_file() else {}

    def _read(self) -> dict[Key, Verdict]:
        """The file's verdicts, read one line at a time (a later line of a scenario replaces an earlier one)."""
        self._cut_torn_tail()
        judged: dict[Key, Verdict] = {}
        for number, start, raw in iter_lines_at(self.path):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
                raise InputFileError(self.path, f"line {number} is not valid JSON: "
                                                f"{getattr(exc, 'msg', exc)}") from exc
            if isinstance(record, dict):
                record.pop("passed", None)
            report = validate_model(GateReport, record, path=self.path, where=f"line {number}")
            judged[(report.env_id, report.scenario_id)] = Verdict.of(report, start)
        return judged

    def _cut_torn_tail(self) -> None:
        """A last line cut short (the gate stopped mid-write) is removed, so the next line starts clean."""
        with open(self.path, "r+b") as f:
            size = f.seek(0, os.SEEK_END)
            if not size:
                return
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return
            f.seek(0)
            end = 0
            for raw in f:
                if raw.endswith(b"\n"):
                    end += len(raw)
            f.truncate(end)
            os.fsync(f.fileno())

    def append(self, report: GateReport) -> None:
        """Record one judged scenario (flushed to disk before returning) and keep its verdict."""
        offset = self.path.stat().st_size if self.path.exists() else 0
        append_jsonl(self.path, report_line(report))
        self.judged[(report.env_id, report.scenario_id)] = Verdict.of(report, offset)

    def line(self, verdict: Verdict) -> Any:
        """The full JSON line of a verdict's scenario, read again from the file."""
        with open(self.path, "rb") as f:
            f.seek(verdict.offset)
            return json.loads(f.readline())


@dataclass
class Selection:
    """The scenarios asked for, in their listing order, with those already judged left out of what is gated."""

    judged: dict[Key, Verdict]
    order: dict[Key, int] = field(default_factory=dict)

    def _keep(self, items: Sequence[Item]) -> list[Item]:
        kept = []
        for item in items:
            key = item_key(item)
            self.order.setdefault(key, len(self.order))
            if key not in self.judged:
                kept.append(item)
        return kept

    def groups(self, groups: list[Group]) -> list[Group]:
        """The groups with judged scenarios left out (a lazily listed group stays lazy)."""
        def lazy(listing: Callable[[], Sequence[Item]]) -> Callable[[], Sequence[Item]]:
            return lambda: self._keep(listing())

        return [(target, lazy(scs) if callable(scs) else self._keep(scs)) for target, scs in groups]

    def verdicts(self, judged: dict[Key, Verdict]) -> list[Verdict]:
        """The verdicts of the asked-for scenarios among `judged` (those of the file before the gate and the
        new ones), in listing order."""
        found = [v for key, v in judged.items() if key in self.order]
        return sorted(found, key=lambda v: self.order[(v.env_id, v.scenario_id)])
