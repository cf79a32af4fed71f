"""What the gate's report on a synthesized draft means for its repair: the verdict (the reasons, the part to
regenerate and the feedback to send) and the items whose validators disagree with a cleanly replayed plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from envscaler_mcp.compare.diff import diff_states
from envscaler_mcp.qa.gate import GateReport
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.synth.scen.anchors import Anchor
from envscaler_mcp.synth.scen.retarget import Misnamed

Part = Literal["task", "checklist", "validators", "solution", "validators+solution"]
_MAX_FEEDBACK = 15


@dataclass
class Verdict:
    """Outcome of gating one draft: no reasons means it is kept."""

    reasons: list[str]
    part: Part | None = None
    feedback: str = ""
    report: GateReport | None = None
    items: list[str] | None = None  # a validators repair: only these items' validators (None: every item)
    anchors: list[Anchor] | None = None  # a task repair: the records the new task is asked about
    show_failed: bool = True  # a task repair: the failed task is shown (not after `retarget.misnamed`, nor to a
    # task that named none of the records offered: the 1.5B model, shown it, wrote it again nearly word for word)


def _named(anchors: Sequence[Anchor]) -> tuple[str, str]:
    """("patients PT-1001 and doctors D01", '"PT-1001", "D01"') as the task feedback names the offered records."""
    return (" and ".join(f"{a.collection} {a.record_id}" for a in anchors),
            ", ".join(f'"{a.record_id}"' for a in anchors))


def ungrounded(anchors: Sequence[Anchor] = ()) -> Verdict:
    """The verdict on a task that names no record of its initial state (`qa.grounding.names_a_record`); with the
    `anchors` its prompt offered, the feedback names them (the 1.5B model, shown member M-2001 and copy C-30001,
    wrote three tasks about "the overdue members" when told only to name the records)."""
    reason = ("the task names no record of the initial state (no id, and no name or other value that only "
              "one record has), so an assistant cannot tell which records to change")
    feedback = f"- {reason}; name the records (by id, or by a name or other value of theirs)"
    if anchors:
        named, ids = _named(anchors)
        feedback += (f"\n- name {named} by id: write {ids} in the task text, and ask for a change to "
                     f"{'it' if len(anchors) == 1 else 'them'}")
    return Verdict(reasons=[f"task: {reason}"], part="task", feedback=feedback, show_failed=not anchors)


def already_held(line: str, anchors: Sequence[Anchor] = ()) -> Verdict:
    """The verdict on a task asking to create a record the state already holds (`existing.py`): asked again, not
    shown the task (the 1.5B model, shown a refused answer, writes it again). Told which record, unless the prompt
    offered `anchors`: then the feedback names no value of the held record and asks for changes to the anchors
    (told "the state already has patient PT-1003 with name John Doe", the 1.5B model registered John Doe again,
    twice)."""
    feedback = f"- {line}"
    if anchors:
        named, ids = _named(anchors)
        feedback = (f"- the task asked to create a record the state already has; do not ask to create one\n"
                    f"- ask for changes to {named} instead, named by id: write {ids} in the task text")
    return Verdict(reasons=[f"task: {line}"], part="task", feedback=feedback, show_failed=False,
                   anchors=list(anchors) or None)


def retargeted(wrong: Misnamed) -> Verdict:
    """The verdict on a task about a record the rules do not let change (`retarget.misnamed`): the task is asked
    again about a record the same change is accepted on."""
    return Verdict(reasons=[f"task: {wrong.reason()}"], part="task", feedback=wrong.feedback(),
                   anchors=wrong.anchors(), show_failed=False)


def _bullets(lines: list[str]) -> str:
    shown = [f"- {line}" for line in lines[:_MAX_FEEDBACK]]
    if len(lines) > _MAX_FEEDBACK:
        shown.append(f"- … and {len(lines) - _MAX_FEEDBACK} more")
    return "\n".join(shown)


def changes(initial: dict[str, Any], final: dict[str, Any], limit: int = 30) -> str:
    lines = []
    for change in diff_states(initial, final)[:limit]:
        old = json.dumps(change.old, ensure_ascii=False, default=str)[:120]
        new = json.dumps(change.new, ensure_ascii=False, default=str)[:120]
        lines.append(f"{change.path_str()}: {change.op} {old} -> {new}")
    return "\n".join(lines) or "(no change)"


def diagnose(report: GateReport, scenario: Scenario, require_mutation: bool) -> Verdict:
    """Which part to regenerate for a gate report, with the feedback to send; no reasons when it passed."""
    status = {s.name: s.status for s in report.steps}
    reasons = report.reasons()
    if report.passed and (not require_mutation or status.get("mutation") == "pass"):
        return Verdict(reasons=[], report=report)
    failing = {s.name for s in report.steps if s.status == "fail"}
    if require_mutation and status.get("mutation") in ("warn", "fail"):
        failing.add("mutation")
    if "consistency" in failing:  # the task disagrees with its plan or checklist (or points at unseen state):
        return Verdict(reasons=reasons, part=None, report=report)  # no part to regenerate saves it: dropped
    validators_bad = bool(failing & {"validators", "initial_false", "mutation"})
    solution_bad = "replay" in failing
    part: Part = ("validators+solution" if "final_true" in failing or (validators_bad and solution_bad)
                  else "solution" if solution_bad else "validators")
    feedback = _bullets([r for r in reasons if not r.startswith("mutation: only the first")] or reasons)
    if "final_true" in failing:
        descriptions = {c.id: c.description for c in scenario.checklist}
        not_met = [f"{r.item_id} ({descriptions.get(r.item_id, '')}) is False after the plan"
                   + (f": {r.reason}" if r.reason else "") for r in report.final_results if not r.passed]
        feedback = _bullets(not_met + [r for r in reasons if not r.startswith("final_true:")])
    if report.final_state is not None and failing & {"final_true", "mutation"}:
        if "mutation" in failing:
            feedback += ("\n\nEvery field the task changes must be checked by some validator (its exact value, or "
                         "for generated values its type and format).")
        feedback += ("\n\nState changes the reference solution made (path: op old -> new):\n"
                     + changes(scenario.initial_state, report.final_state))
    return Verdict(reasons=reasons, part=part, feedback=feedback, report=report)


def disagreeing_items(report: GateReport, scenario: Scenario) -> list[str]:
    """Ids of the items whose validators disagree with a cleanly replayed reference solution (see the module
    docstring); [] when the replay itself failed or something else than the validators failed."""
    failing = {s.name for s in report.steps if s.status == "fail"}
    if not failing or not failing <= {"validators", "initial_false", "final_true"} or report.final_state is None:
        return []
    bad = {r.item_id for r in report.initial_results if r.reason is not None}
    bad |= {c.id for c, r in zip(scenario.checklist, report.initial_results, strict=False)
            if c.kind == "state" and c.claims_change and r.passed}
    bad |= {r.item_id for r in report.final_results if not r.passed}
    return [c.id for c in scenario.checklist if c.id in bad]


def describe(verdict: Verdict) -> str:
    """The part a repair rewrites, as the drop reason names it."""
    if verdict.part == "validators" and verdict.items:
        return f"validators of {', '.join(verdict.items)}"
    if verdict.part == "checklist" and verdict.items:
        return f"checklist items {', '.join(verdict.items)} (already true initially)"
    return str(verdict.part)
