"""What the scenario builder tries without the model when a draft's validators disagree with a cleanly replayed
reference solution: validators written by code from exact items (`coded`, before a repair round), and the
checklist pruned of the items that still disagree (`pruned`, after one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from envscaler_mcp._json import State
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.synth.scen.item_check import written_by_code
from envscaler_mcp.synth.scen.marks import item_code, marked_by_evidence
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.verdicts import Verdict, disagreeing_items

MIN_ITEMS = 2  # a checklist pruned of disagreeing items keeps at least this many
Evaluate = Callable[[State, Draft], Awaitable[Verdict]]


def coded(scenario: Scenario, state: State, draft: Draft, verdict: Verdict) -> Draft | None:
    """The draft with the disagreeing items' validators written by code where their text makes an exact claim
    (`item_check.py`), or None when none is; the last note says which."""
    report = verdict.report
    if report is None or report.final_state is None:
        return None
    disagreeing = disagreeing_items(report, scenario)
    if not disagreeing:
        return None
    checklist, rewritten = written_by_code(draft.checklist, disagreeing, state, dict(report.final_state))
    if not rewritten:
        return None
    note = (f"validators of {', '.join(rewritten)} written by code from their items' text (the record, field "
            "and value each names): the model's disagreed with the reference solution ("
            + "; ".join(verdict.reasons)[:300] + ")")
    return draft.model_copy(update={"checklist": checklist, "notes": [*draft.notes, note]})


async def pruned(evaluate: Evaluate, scenario: Scenario, state: State, draft: Draft, verdict: Verdict
                 ) -> Draft | None:
    """The draft after a last try that costs no model call, if the whole gate then passes; else None.

    Only when the reference solution replayed cleanly: an item marked [change] whose validator holds both
    on the initial state and after the solution asserts something that stays so: it is re-marked [keep]
    (what a repair may do by heading it `# c4 [keep]`; the mutation test still demands that every changed
    field is guarded). Items whose validators still disagree with the solution are dropped if they are at
    most half of the checklist and `MIN_ITEMS` different validators are left."""
    report = verdict.report
    disagreeing = [] if report is None else disagreeing_items(report, scenario)
    if report is None or not disagreeing:
        return None
    before = {r.item_id for r in report.initial_results if r.passed and r.reason is None}
    after = {r.item_id for r in report.final_results if r.passed and r.reason is None}
    steady = [c.id for c in draft.checklist
              if c.kind == "state" and c.claims_change and c.id in before and c.id in after]
    checklist = [c.model_copy(update={"claims_change": False}) if c.id in steady else c for c in draft.checklist]
    notes = [*draft.notes] + ([f"checklist items {', '.join(steady)} re-marked [keep]: their validators hold "
                               "before and after the reference solution"] if steady else [])
    bad = [i for i in disagreeing if i not in steady]  # a steady item disagreed only by its [change] mark
    kept = [c for c in checklist if c.id not in bad]
    if len(bad) > len(checklist) // 2 or len({item_code(c) for c in kept}) < MIN_ITEMS:
        return None
    if bad:
        notes.append(f"checklist items {', '.join(bad)} dropped: their validators disagreed with the "
                     "reference solution (" + "; ".join(verdict.reasons)[:300] + ")")
    candidate = draft.model_copy(update={"checklist": kept, "notes": notes})
    final = await evaluate(state, candidate)
    return None if final.reasons else marked_by_evidence(candidate, final.report)
