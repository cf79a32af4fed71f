"""Reference solutions from recorded trajectories (EnvScaler's SFT data), each verified by replay first.

A trajectory is matched to an imported scenario by its task_info (EnvScaler env_id and task_id, else the task
text). Its tool calls are replayed in a fresh episode of the environment's generated server, at the scenario's
initial state. It is attached as the scenario's reference solution only when

* every call succeeds (calls whose recorded result reported a failure are left out first: the server rolls a
  failed call back, so they change nothing); a trajectory left with no call is the reference "make no call"
  (a task that needs none), checked like any other on the state it leaves (the initial one),
* every call returns what the trajectory recorded (EnvScaler records `str()` of the method's result), and
* the final state passes every state item of the scenario's checklist that has a validator.

Anything else is reported with its reason and not attached. The scenario files are rewritten one scenario at a
time, through temporary files renamed at the end, and their catalog index with them.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._io import PendingFiles
from envscaler_mcp._outcome import DEFAULT_CONVENTION, call_succeeded
from envscaler_mcp.catalog.store import index_row, load_skeleton, skeleton_file, write_index_rows
from envscaler_mcp.interop.skips import Skipped, reason_group
from envscaler_mcp.interop.trajectories import RecordedCall, Trajectory, iter_trajectories
from envscaler_mcp.launch import Transport, launch_server
from envscaler_mcp.qa.replay import EpisodeFactory, replay_calls
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.scoring.sandbox import ValidatorSandbox
from envscaler_mcp.scoring.transcript import EMPTY_TRANSCRIPT


@dataclass
class SolutionReport:
    """What attaching solutions from a trajectory file did."""

    attached: list[str] = field(default_factory=list)  # scenario ids
    unverified: list[str] = field(default_factory=list)  # one line each: trajectory, scenario, reason
    unmatched: int = 0  # trajectories of no imported scenario
    unusable: list[str] = field(default_factory=list)  # items that are not trajectories, with the reason
    skipped: list[Skipped] = field(default_factory=list)  # every trajectory not attached, with its reason


def _parsed(text: str) -> Any:
    """A recorded or replayed result as a value: JSON, else a Python literal (str() of a dict), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip()


def _failed(call: RecordedCall, convention: str) -> bool:
    """Did the recorded result report a failure under the environment's convention ({'success': False, ...} for
    EnvScaler's)? A call without a recorded result is taken as made."""
    return call.result is not None and not call_succeeded(_parsed(call.result), False, convention)


async def verify_trajectory(scenario: Scenario, trajectory: Trajectory, factory: EpisodeFactory,
                            sandbox: ValidatorSandbox, convention: str = DEFAULT_CONVENTION) -> list[ToolCall] | str:
    """The trajectory's calls as a verified reference solution of `scenario`, or why they are not one. Calls
    succeed or fail by the environment's `convention` (_outcome.py), recorded and replayed alike."""
    kept = [c for c in trajectory.calls if not _failed(c, convention)]
    calls = [ToolCall(tool=c.tool, arguments=c.arguments) for c in kept]
    made, final, reasons = await replay_calls(calls, scenario.initial_state, factory, convention=convention)
    if reasons or final is None:
        return reasons[0] if reasons else "the replay gave no final state"
    for n, (replayed, recorded) in enumerate(zip(made, kept, strict=True), start=1):
        if recorded.result is not None and _parsed(recorded.result) != _parsed(replayed.result_text):
            return (f"call {n} {replayed.tool} returned {replayed.result_text[:150]!r}, the trajectory recorded "
                    f"{recorded.result[:150]!r}")
    items = [c for c in scenario.checklist if c.kind == "state" and (c.validator or "").strip()]
    if items:
        results = await sandbox.run(items, scenario.initial_state, final, EMPTY_TRANSCRIPT)
        failing = [f"{r.item_id}{f' ({r.reason})' if r.reason else ''}" for r in results if not r.passed]
        if failing:
            return "the final state fails " + ", ".join(failing)
    return calls


def _match(scenario: Scenario, candidates: dict[str, list[Trajectory]]) -> list[Trajectory]:
    by_id = candidates.get(f"id:{scenario.provenance.source_id}") if scenario.provenance.source_id else None
    return by_id or candidates.get(f"task:{scenario.task}", [])


def _label(t: Trajectory) -> str:
    return f"trajectory #{t.position}" + (f" (task_id {t.task_id})" if t.task_id else "")


async def attach_solutions(out: Path, env_ids: list[str], trajectories_path: Path, *, transport: Transport = "http",
                           timeout_s: float = 2.0) -> SolutionReport:
    """Attach verified solutions from `trajectories_path` to the scenarios of `env_ids` imported into `out`."""
    report = SolutionReport()
    environments = Path(out) / "environments"
    ours = {str(load_skeleton(skeleton_file(environments, env_id)).provenance.source_id): env_id
            for env_id in env_ids}  # EnvScaler env_id -> ours; only their trajectories are kept in memory
    by_env: dict[str, dict[str, list[Trajectory]]] = {}
    for position, trajectory in iter_trajectories(trajectories_path):
        if isinstance(trajectory, str):
            report.unusable.append(f"{trajectories_path}: item #{position}: {trajectory}")
            report.skipped.append(Skipped("trajectory", reason_group(trajectory), report.unusable[-1]))
            continue
        if trajectory.env_id not in ours:
            report.unmatched += 1
            continue
        keys = by_env.setdefault(ours[trajectory.env_id], {})
        if trajectory.task_id:
            keys.setdefault(f"id:{trajectory.task_id}", []).append(trajectory)
        if trajectory.task:
            keys.setdefault(f"task:{trajectory.task}", []).append(trajectory)
    used: set[int] = set()
    async with ValidatorSandbox(timeout_s=timeout_s, workers=1) as sandbox:
        for env_id, candidates in by_env.items():
            path = Path(out) / "scenarios" / f"{env_id}.jsonl"
            if not path.is_file():
                continue
            try:
                skeleton = load_skeleton(skeleton_file(environments, env_id))
                async with launch_server(skeleton, transport=transport) as server:
                    await _attach_env(path, candidates, server.episode, sandbox, report, used,
                                      skeleton.success_convention)
            except Exception as exc:  # the server did not start or died: this env's file is left as it was
                while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]
                report.unverified.append(f"environment {env_id}: its trajectories were not replayed "
                                         f"({type(exc).__name__}: {str(exc)[:300]})")
                held = {id(t) for ts in candidates.values() for t in ts} - used
                report.skipped.append(Skipped("trajectory", "its environment's server did not start",
                                              report.unverified[-1], count=len(held)))
                used.update(held)
    seen = {id(t) for keys in by_env.values() for ts in keys.values() for t in ts}
    report.unmatched += len(seen) - len(used)
    if report.unmatched:
        report.skipped.append(Skipped("trajectory", "no imported scenario has its task",
                                      f"{report.unmatched} trajectory(ies) of no imported scenario",
                                      count=report.unmatched))
    return report


def rejection_group(reason: str) -> str:
    """The kind of a replay's rejection, to count trajectories that fail alike together."""
    if reason.startswith("the final state fails"):
        return "the replayed final state fails the checklist"
    if " returned " in reason and "the trajectory recorded" in reason:
        return "a call returned other than the trajectory recorded"
    if reason.startswith("call "):
        return "a call failed in the replay"
    return "the replay failed"


async def _attach_env(path: Path, candidates: dict[str, list[Trajectory]], factory: EpisodeFactory,
                      sandbox: ValidatorSandbox, report: SolutionReport, used: set[int], convention: str) -> None:
    rows: list[dict[str, object]] = []
    changed = False
    with PendingFiles() as pending, path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            scenario = Scenario.model_validate_json(line)
            matches = _match(scenario, candidates)
            for trajectory in matches:
                used.add(id(trajectory))
            if matches and not scenario.has_reference():
                for trajectory in matches:
                    outcome = await verify_trajectory(scenario, trajectory, factory, sandbox, convention)
                    if isinstance(outcome, str):
                        report.unverified.append(f"{_label(trajectory)} for scenario {scenario.id}: {outcome}")
                        report.skipped.append(Skipped("trajectory", rejection_group(outcome),
                                                      report.unverified[-1]))
                        continue
                    scenario = scenario.model_copy(update={"reference_solution": outcome,
                                                           "reference_makes_no_calls": not outcome})
                    report.attached.append(scenario.id)
                    line = scenario.model_dump_json() + "\n"
                    changed = True
                    break
            pending.append(path, line if line.endswith("\n") else line + "\n")
            rows.append(index_row(scenario))
        if changed:
            pending.commit()
        else:
            pending.discard()
    if changed:
        write_index_rows(path, rows)
