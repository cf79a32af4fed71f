"""Model-free edits of a draft's checklist by what its validators do: items whose validator repeats an earlier
item's are dropped, and a passing draft's [keep] items that are False on the initial state are re-marked
[change]."""

from __future__ import annotations

from envscaler_mcp.qa.gate import GateReport
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth.scen.records import Draft


def marked_by_evidence(draft: Draft, report: GateReport | None) -> Draft:
    """A passing draft whose [keep] items' validators are False on the initial state has them re-marked
    [change]: an item that must become true is a change, whatever its mark says (a small model's repair
    re-marked "Has appointment 1 been cancelled?" [keep])."""
    if report is None:
        return draft
    false_before = {r.item_id for r in report.initial_results if not r.passed and r.reason is None}
    flip = [c.id for c in draft.checklist if c.kind == "state" and not c.claims_change and c.id in false_before]
    if not flip:
        return draft
    return draft.model_copy(update={
        "checklist": [c.model_copy(update={"claims_change": True}) if c.id in flip else c for c in draft.checklist],
        "notes": [*draft.notes, f"checklist items {', '.join(flip)} re-marked [change]: their validators are "
                  "False on the initial state"]})


def without_repeats(draft: Draft) -> Draft:
    """The draft without items whose validator repeats an earlier item's (the same code, spacing aside): a
    second item checking the same thing adds nothing (a small model fills a checklist that way)."""
    seen: set[str] = set()
    kept = []
    for item in draft.checklist:
        code = item_code(item)
        if code and code in seen:
            continue
        seen.add(code)
        kept.append(item)
    if len(kept) == len(draft.checklist):
        return draft
    kept_ids = {c.id for c in kept}
    dropped = [c.id for c in draft.checklist if c.id not in kept_ids]
    return draft.model_copy(update={"checklist": kept, "notes": [
        *draft.notes, f"checklist items {', '.join(dropped)} dropped: their validators repeat an earlier item's"]})


def item_code(item: ChecklistItem) -> str:
    """An item's validator with its spacing normalised, to tell repeats apart."""
    return " ".join((item.validator or "").split())
