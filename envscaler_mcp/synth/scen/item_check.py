"""Validators written by code for checklist items that say one field of one record has one value.

A small model's checklist item is often exact ("Has tickets INC-3001 status 'closed'?") while the validator it
writes for it reads another field, another collection or a value of its own, and the gate then drops a draft
whose task, item and plan agree, after repair rounds that cost minutes each and tend to repeat the mistake.
An item whose text names exactly one record by id, quotes exactly one value, and mentions a field of that
record which has that value after the reference solution says all a validator needs: the check is written
from the text (the record found in its collection, the field compared with `==`), never from what the plan
happens to do. It replaces the model's validator only where that validator disagrees with a cleanly replayed
reference solution, and for a [change] item only when the field had another value, or the record did not
exist, on the initial state. The whole gate (mutation test included) then judges the draft as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth.scen.anchors import Anchor, records
from envscaler_mcp.synth.scen.checklist_fix import mentions

_DENIES = re.compile(r"\b(?:not|no longer|never|other than|anything but|except|instead of|differ\w*)\b|n['’]t\b", re.I)
QUOTED = re.compile(r"""(?<![\w])['"‘“]([^'"’”]{1,80})['"’”](?![\w])""")


@dataclass(frozen=True)
class FieldClaim:
    """What an item says: `collection`'s record `record_id` (its id in `id_field` for a list collection, None
    for a dict keyed by id) has `field` equal to `value`."""

    collection: str
    record_id: str
    id_field: str | None
    field: str
    value: str | int | float | bool | None

    def source(self) -> str:
        """The validator: the record looked up in its collection, the field compared with `==`."""
        if self.id_field is None:
            find = (f"    records = final_state.get({self.collection!r})\n"
                    f"    record = records.get({self.record_id!r}) if isinstance(records, dict) else None\n")
        else:
            find = (f"    records = final_state.get({self.collection!r})\n"
                    "    record = None\n"
                    "    for candidate in records if isinstance(records, list) else []:\n"
                    f"        if isinstance(candidate, dict) and str(candidate.get({self.id_field!r})) == "
                    f"{self.record_id!r}:\n"
                    "            record = candidate\n")
        return ("def check_func(final_state):\n" + find
                + f"    return isinstance(record, dict) and record.get({self.field!r}) == {self.value!r}\n")


def _same(value: Any, said: str) -> bool:
    """Whether a scalar field value is the quoted text (case and surrounding spaces aside)."""
    if isinstance(value, bool):
        return said.strip().lower() == str(value).lower()
    if isinstance(value, str):
        return value.strip().lower() == said.strip().lower()
    if isinstance(value, int | float):
        try:
            return float(said.replace(",", "")) == float(value)
        except ValueError:
            return False
    return False


def _named(text: str, field: str, record: dict[str, Any]) -> bool:
    """Whether the text names `field` itself, not only inside a longer field's name ("payment status" does not
    name status)."""
    for other in (o for o in record if len(o) > len(field)):
        for name in (other, other.replace("_", " ")):
            text = re.sub(re.escape(name), " ", text, flags=re.I)
    return mentions(text, field) or mentions(text, field.replace("_", " "))


def _id_field(state: State, anchor: Anchor) -> str | None:
    """None for a dict collection keyed by id; the field holding the id for a list collection."""
    if isinstance(state.get(anchor.collection), dict):
        return None
    return next((k for k, v in anchor.record.items() if str(v) == anchor.record_id and isinstance(v, str | int)),
                "")


def claim(item: ChecklistItem, initial: State, final: State) -> FieldClaim | None:
    """The item's claim when its text names exactly one record of the final state by id, quotes exactly one
    value, and mentions exactly one field of that record having that value after the solution; None when the
    text says anything less exact or denies the value ("not", "no longer"), or when a [change] item's field
    already had the value initially."""
    if item.kind != "state":
        return None
    text = item.description
    named = {(a.collection, a.record_id): a for a in records(final) if mentions(text, a.record_id)}
    quoted = {q.strip().lower() for q in QUOTED.findall(text)}
    if len(named) != 1 or len(quoted) != 1 or _DENIES.search(QUOTED.sub(" ", text)):
        return None  # a denied value ("status not 'open'") is no claim that the field has it
    anchor, said = next(iter(named.values())), next(iter(quoted))
    fields = [f for f, v in anchor.record.items() if _named(text, f, anchor.record) and _same(v, said)]
    id_field = _id_field(final, anchor)
    if len(fields) != 1 or id_field == "":
        return None
    field, value = fields[0], anchor.record[fields[0]]
    if item.claims_change:
        before = next((a.record for a in records(initial)
                       if (a.collection, a.record_id) == (anchor.collection, anchor.record_id)), None)
        if before is not None and before.get(field) == value:
            return None
    return FieldClaim(anchor.collection, anchor.record_id, id_field, field, value)


def written_by_code(checklist: list[ChecklistItem], disagreeing: list[str], initial: State, final: State
                    ) -> tuple[list[ChecklistItem], list[str]]:
    """The checklist with the validators of the disagreeing items whose text makes an exact claim written by
    code, and the ids of the items rewritten."""
    rewritten: list[str] = []
    out = []
    for item in checklist:
        found = claim(item, initial, final) if item.id in disagreeing else None
        if found is not None and found.source() != (item.validator or "").strip() + "\n":
            item = item.model_copy(update={"validator": found.source()})
            rewritten.append(item.id)
        out.append(item)
    return out, rewritten
