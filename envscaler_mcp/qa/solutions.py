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
time, through temporary files renamed at the end, and their catalog index with them. The trajectory file is read
one item at a time and the trajectories of imported environments wait in a spool on disk (interop/spool.py)
until their environment's turn: memory holds, per trajectory, its position and the keys a scenario finds it by.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._io import PendingFiles
from envscaler_mcp._outcome import DEFAULT_CONVENTION, call_succeeded
from envscaler_mcp.catalog.store import (
    index_row,
    load_skeleton,
    scenario_keeping_state,
    skeleton_file,
    write_index_rows,
)
from envscaler_mcp.interop.skips import Skipped, reason_group
from envscaler_mcp.interop.spool import Spool
from envscaler_mcp.interop.trajectories import RecordedCall, Trajectory, iter_trajectories
from envscaler_mcp.launch import Transport, launch_server
from envscaler_mcp.references.replay import EpisodeFactory, replay_calls
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.arguments import argument_problems, coerce_arguments
from envscaler_mcp.skeleton.models import ToolSpec
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT


@dataclass(frozen=True)
class _Checking:
    """How one environment's trajectories are checked: its success convention, its tools, and coercion."""

    convention: str
    tools: dict[str, ToolSpec]
    coerce: bool


class UncheckedCodeError(RuntimeError):
    """Code with static-check findings would run outside the OS layers."""


@dataclass
class SolutionReport:
    """What attaching solutions from a trajectory file did."""

    attached: list[str] = field(default_factory=list)  # scenario ids
    unverified: list[str] = field(default_factory=list)  # one line each: trajectory, scenario, reason
    unmatched: int = 0  # trajectories of no imported scenario
    unusable: list[str] = field(default_factory=list)  # items that are not trajectories, with the reason
    skipped: list[Skipped] = field(default_factory=list)  # every trajectory not attached, with its reason
    coerced: list[str] = field(default_factory=list)  # arguments converted (--coerce-arguments), one line each


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


def checked_arguments(calls: list[ToolCall], tools: dict[str, ToolSpec], coerce: bool
                      ) -> tuple[list[ToolCall], list[str]] | str:
    """`calls` whose arguments fit their tools' schemas (converted where that is lossless, with `coerce`), and a
    note per conversion; or the data problem: which call, which argument, expected and given."""
    fitted, notes = [], []
    for n, call in enumerate(calls, start=1):
        tool = tools.get(call.tool)
        if tool is None:
            return f"data problem: call {n} {call.tool}: no such tool (tools: {', '.join(sorted(tools))})"
        arguments, changes = coerce_arguments(tool, call.arguments) if coerce else (call.arguments, [])
        problems = argument_problems(tool, arguments)
        if problems:
            hint = "" if coerce else " (--coerce-arguments converts lossless cases such as '001' -> 1)"
            return f"data problem: call {n} {call.tool}: " + "; ".join(problems) + hint
        notes += [f"argument: call {n} {call.tool}: {change} (--coerce-arguments)" for change in changes]
        fitted.append(call.model_copy(update={"arguments": arguments}) if changes else call)
    return fitted, notes


async def verify_trajectory(scenario: Scenario, trajectory: Trajectory, factory: EpisodeFactory,
                            sandbox: ValidatorSandbox, convention: str = DEFAULT_CONVENTION, *,
                            tools: dict[str, ToolSpec] | None = None, coerce: bool = False
                            ) -> tuple[list[ToolCall], list[str]] | str:
    """The trajectory's calls as a verified reference solution of `scenario` (with a note per argument
    converted), or why they are not one. Calls succeed or fail by the environment's `convention`
    (_outcome.py), recorded and replayed alike; given the environment's `tools`, arguments that do not fit
    their schema are a data problem found before the replay (`coerce`: converted first when lossless)."""
    kept = [c for c in trajectory.calls if not _failed(c, convention)]
    calls = [ToolCall(tool=c.tool, arguments=c.arguments) for c in kept]
    notes: list[str] = []
    if tools is not None:
        checked = checked_arguments(calls, tools, coerce)
        if isinstance(checked, str):
            return checked
        calls, notes = checked
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
    return calls, notes


Candidates = dict[str, list[int]]  # of one environment: match key -> positions of its trajectories in the file


def _task_key(task: str) -> str:
    """The key a trajectory is found by its task text (a digest: memory holds no task text per trajectory)."""
    return "task:" + hashlib.blake2b(task.encode("utf-8"), digest_size=16).hexdigest()


def _match(scenario: Scenario, candidates: Candidates) -> list[int]:
    by_id = candidates.get(f"id:{scenario.provenance.source_id}") if scenario.provenance.source_id else None
    return by_id or candidates.get(_task_key(scenario.task), [])


def _label(t: Trajectory) -> str:
    return f"trajectory #{t.position}" + (f" (task_id {t.task_id})" if t.task_id else "")


async def attach_solutions(out: Path, env_ids: list[str], trajectories_path: Path, *, transport: Transport = "http",
                           timeout_s: float = 2.0, coerce: bool = False) -> SolutionReport:
    """Attach verified solutions from `trajectories_path` to the scenarios of `env_ids` imported into `out`.
    Arguments that do not fit their tool's schema are a data problem of that trajectory; with
    `coerce` lossless conversions ('001' -> 1) are made first and noted in the scenario's provenance."""
    with Spool[int, Trajectory]() as spool:
        return await _attach_spooled(out, env_ids, trajectories_path, spool, transport=transport,
                                     timeout_s=timeout_s, coerce=coerce)


def _spooled(out: Path, env_ids: list[str], trajectories_path: Path, spool: Spool[int, Trajectory],
             report: SolutionReport) -> dict[str, Candidates]:
    """Read the trajectory file one item at a time; put the trajectories of `env_ids` in `spool` (by position)
    and return, per env id of ours, the keys a scenario finds them by. Items that are not trajectories and
    trajectories of other environments are counted in `report`."""
    environments = Path(out) / "environments"
    ours = {str(load_skeleton(skeleton_file(environments, env_id)).provenance.source_id): env_id
            for env_id in env_ids}  # EnvScaler env_id -> ours
    by_env: dict[str, Candidates] = {}
    for position, trajectory in iter_trajectories(trajectories_path):
        if isinstance(trajectory, str):
            report.unusable.append(f"{trajectories_path}: item #{position}: {trajectory}")
            report.skipped.append(Skipped("trajectory", reason_group(trajectory), report.unusable[-1]))
            continue
        if trajectory.env_id not in ours:
            report.unmatched += 1
            continue
        spool[position] = trajectory
        keys = by_env.setdefault(ours[trajectory.env_id], {})
        if trajectory.task_id:
            keys.setdefault(f"id:{trajectory.task_id}", []).append(position)
        if trajectory.task:
            keys.setdefault(_task_key(trajectory.task), []).append(position)
    return by_env


async def _attach_spooled(out: Path, env_ids: list[str], trajectories_path: Path, spool: Spool[int, Trajectory],
                          *, transport: Transport, timeout_s: float, coerce: bool) -> SolutionReport:
    report = SolutionReport()
    environments = Path(out) / "environments"
    by_env = _spooled(out, env_ids, trajectories_path, spool, report)
    used: set[int] = set()
    async with ValidatorSandbox(timeout_s=timeout_s, workers=1) as sandbox:
        for env_id, candidates in by_env.items():
            path = Path(out) / "scenarios" / f"{env_id}.jsonl"
            if not path.is_file():
                continue
            try:
                skeleton = load_skeleton(skeleton_file(environments, env_id))
                if transport == "memory" and any(n.startswith("static check") for n in skeleton.provenance.notes):
                    raise UncheckedCodeError("its code has static-check findings that only the OS layers contain, "
                                             "and the memory transport runs it in this process: replay over http "
                                             "or stdio")
                async with launch_server(skeleton, transport=transport) as server:
                    await _attach_env(path, candidates, spool, server.episode, sandbox, report, used,
                                      _Checking(skeleton.success_convention, {t.name: t for t in skeleton.tools},
                                                coerce))
            except Exception as exc:  # the server did not start or died: this env's file is left as it was
                while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]
                report.unverified.append(f"environment {env_id}: its trajectories were not replayed "
                                         f"({type(exc).__name__}: {str(exc)[:300]})")
                held = {p for ps in candidates.values() for p in ps} - used
                why = "its environment's code may not run outside the OS layers" if isinstance(
                    exc, UncheckedCodeError) else "its environment's server did not start"
                report.skipped.append(Skipped("trajectory", why, report.unverified[-1], count=len(held)))
                used.update(held)
    report.unmatched += len(spool) - len(used)
    if report.unmatched:
        report.skipped.append(Skipped("trajectory", "no imported scenario has its task",
                                      f"{report.unmatched} trajectory(ies) of no imported scenario",
                                      count=report.unmatched))
    return report


def rejection_group(reason: str) -> str:
    """The kind of a replay's rejection, to count trajectories that fail alike together."""
    if reason.startswith("data problem: "):
        return "a call's arguments do not fit its tool's schema"
    if reason.startswith("the final state fails"):
        return "the replayed final state fails the checklist"
    if " returned " in reason and "the trajectory recorded" in reason:
        return "a call returned other than the trajectory recorded"
    if reason.startswith("call "):
        return "a call failed in the replay"
    return "the replay failed"


async def _attach_env(path: Path, candidates: Candidates, spool: Spool[int, Trajectory], factory: EpisodeFactory,
                      sandbox: ValidatorSandbox, report: SolutionReport, used: set[int], checking: _Checking
                      ) -> None:
    rows: list[dict[str, object]] = []
    changed = False
    with PendingFiles() as pending, path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            scenario = scenario_keeping_state(line, path=path, where=f"line {number}")  # its state not remembered
            matches = _match(scenario, candidates)
            used.update(matches)
            if matches and not scenario.has_reference():
                for position in matches:
                    trajectory = spool[position]
                    outcome = await verify_trajectory(scenario, trajectory, factory, sandbox, checking.convention,
                                                      tools=checking.tools, coerce=checking.coerce)
                    if isinstance(outcome, str):
                        report.unverified.append(f"{_label(trajectory)} for scenario {scenario.id}: {outcome}")
                        report.skipped.append(Skipped("trajectory", rejection_group(outcome),
                                                      report.unverified[-1]))
                        continue
                    solution, notes = outcome
                    report.coerced += [f"scenario {scenario.id}: {note}" for note in notes]
                    provenance = scenario.provenance.model_copy(
                        update={"notes": [*scenario.provenance.notes, *notes]})
                    scenario = scenario.model_copy(update={"reference_solution": solution, "provenance": provenance,
                                                           "reference_makes_no_calls": not solution})
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
