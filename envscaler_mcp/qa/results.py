"""The gate's results file: one JSON line per scenario, appended (and fsync'd) as each is judged, so a large
gate can be stopped and resumed (`scenarios check --results FILE --resume`): a scenario whose line is there is
not judged again.

A line is the scenario's report as `scenarios check --json` prints it ({...report, "passed": bool}). Locally
the gate appends each line as the report is done; on Ray (adapters/ray_gate.py) a worker's line comes back to
the driver, which appends it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._io import append_jsonl, iter_jsonl, validate_model
from envscaler_mcp.errors import UsageError
from envscaler_mcp.qa.batch import Group, Item, StoredScenario
from envscaler_mcp.qa.gate import GateReport

Key = tuple[str, str]  # (env id, scenario id)


def report_line(report: GateReport) -> dict[str, Any]:
    """The JSON line of a report (as `--json` prints it)."""
    return {**report.model_dump(mode="json"), "passed": report.passed}


def item_key(item: Item) -> Key:
    """The (env id, scenario id) of a scenario to gate."""
    scenario = item.header if isinstance(item, StoredScenario) else item
    return scenario.env_id, scenario.id


class ResultsFile:
    """A gate's JSONL results file: the reports judged so far, and each new one appended."""

    def __init__(self, path: Path, *, resume: bool) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise UsageError(f"--results {path}: a folder; give a file (JSONL)")
        if not resume and self.path.is_file() and self.path.stat().st_size:
            raise UsageError(f"--results {path}: already holds results; pass --resume to judge only the scenarios "
                             "not in it, or give another file")
        self.judged: dict[Key, GateReport] = self._read() if resume and self.path.is_file() else {}

    def _read(self) -> dict[Key, GateReport]:
        self._cut_torn_tail()
        judged: dict[Key, GateReport] = {}
        for number, record in iter_jsonl(self.path):
            if isinstance(record, dict):
                record.pop("passed", None)
            report = validate_model(GateReport, record, path=self.path, where=f"line {number}")
            judged[(report.env_id, report.scenario_id)] = report
        return judged

    def _cut_torn_tail(self) -> None:
        """A last line cut short (the gate stopped mid-write) is removed, so the next line starts clean."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with open(self.path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
                os.fsync(f.fileno())

    def append(self, report: GateReport) -> None:
        """Record one judged scenario (flushed to disk before returning)."""
        append_jsonl(self.path, report_line(report))


@dataclass
class Selection:
    """The scenarios asked for, in their listing order, with those already judged left out of what is gated."""

    judged: dict[Key, GateReport]
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

    def reports(self, new: list[GateReport]) -> list[GateReport]:
        """The judged reports of the asked-for scenarios and the new ones, in listing order."""
        found = {key: r for key, r in self.judged.items() if key in self.order}
        found.update({(r.env_id, r.scenario_id): r for r in new})
        return sorted(found.values(), key=lambda r: self.order.get((r.env_id, r.scenario_id), len(self.order)))
