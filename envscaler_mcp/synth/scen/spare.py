"""An item that cannot be made to work is dropped, not the scenario, when what remains still checks the task.

The 1.5B model lost whole items to one checklist item: an `ecommerce_orders` item (c4, an order's status) still
true on the initial state after the checklist's repair, the three others good; a `clinic_appointments` validator
(c4) reading `end_time`, a field no appointment has, in all four of its answers. Here such an item is left out
when at least `MIN_ITEMS` items with different validators remain and one of them claims a change; the draft
carries the step's failure (`Draft.spared`), and the gate decides: its mutation test reverts each field the
reference solution changed, and the scenario is kept only when some remaining validator catches a probe of every
one of them (`unchecked`: free text included, which the mutation test itself lets pass) and the whole gate
passes. When they do not (the dropped item was the only check of
a change), the item is dropped with the step's own failure, as it was before. The dropped items are named in the
scenario's provenance notes and in the run's line for the item. Only where the gate's mutation test runs on the
validators alone (`require_mutation`, `--guard validators`): otherwise nothing would show the rest suffices.
"""

from __future__ import annotations

from collections.abc import Sequence

from envscaler_mcp.qa.gate import GateReport
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth.llm import StepFailed
from envscaler_mcp.synth.scen.marks import item_code
from envscaler_mcp.synth.scen.records import Draft

MIN_ITEMS = 2  # items with different validators a spared checklist keeps


class PartlyWritten(StepFailed):
    """The validators step gave up on some items while others have usable validators (`written`)."""

    def __init__(self, failed: StepFailed, written: list[ChecklistItem], missing: list[str]) -> None:
        super().__init__(failed.step, failed.reason, failed.attempts, failed.kind)
        self.written = written
        self.missing = missing


def spared(checklist: Sequence[ChecklistItem], missing: Sequence[str]) -> list[ChecklistItem] | None:
    """The checklist without the `missing` items, when at least MIN_ITEMS different validators remain and one
    of the remaining items claims a change; else None (the item's failure drops the scenario)."""
    kept = [c for c in checklist if c.id not in missing]
    if not missing or len({item_code(c) for c in kept if c.validator}) < MIN_ITEMS:  # so len(kept) >= MIN_ITEMS too
        return None
    if not any(c.claims_change for c in kept) or any(not c.validator for c in kept):
        return None
    return kept


def spare_draft(draft: Draft, checklist: list[ChecklistItem], missing: list[str], failed: StepFailed,
                reason: str = "", *, allowed: bool) -> Draft:
    """The draft with `checklist` (the `missing` items left out) when the rest may still check the task
    (`spared`; the gate then decides), else `failed` is raised as before. `allowed`: the gate's mutation test runs
    on the validators alone."""
    kept = spared(checklist, missing) if allowed else None
    if kept is None:
        raise failed
    why = reason or failed.reason
    return draft.model_copy(update={"checklist": kept, "spared": (failed.step, why),
                                    "notes": [*draft.notes, spare_note(missing, failed.step, why)]})


def spare_note(missing: Sequence[str], step: str, reason: str) -> str:
    """The provenance note (and the run's line) naming the dropped items and why."""
    return (f"checklist item(s) {', '.join(missing)} dropped at the {step} step, the others kept (every field "
            f"the reference solution changes is checked by one of them): {reason[:400]}")


def unchecked(report: GateReport) -> list[str]:
    """The fields the reference solution changed that no validator checks: a field is checked when some
    validator turned False on some probe of it (`qa.mutation`: reverted, set to a third value, removed), or on
    the removal of the record it was added in. Stricter than the mutation test, which passes a free field (free
    text) nothing checks: the dropped item may have been the only check of a note the task asks for. [] when the
    mutation test did not run (the gate then fails on something else first)."""
    if report.mutation is None:
        return []
    own = [p for p in report.mutation.probes if not p.collateral]
    caught = {p.path for p in own if p.caught_by}
    return [path for path in dict.fromkeys(p.path for p in own)
            if not any(path == c or path.startswith((c + ".", c + "[")) for c in caught)]
