"""The changes of a plan-first plan (`plan_first.py`), read from its replay, and the checklist and validators
written by code from them: a `[change]` item per changed field that is not free, and one per added record
(checked by its fields under any id, the field holding its id by the shape of the system's ids)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.compare.diff import diff_states
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth.scen.item_check import FieldClaim

_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class Change:
    """One field of one record changed by the plan; `free`: a field any value of which is accepted."""

    collection: str
    record_id: str
    field: str
    old: Any
    new: Any
    free: bool
    added: bool = False  # a record the plan added: `new` holds its fields that are not free, `field` is ""

    def line(self) -> str:
        if self.added:
            return f"{self.collection}: a new record " + json.dumps(self.new, ensure_ascii=False, default=str)[:300]
        return f"{self.collection} {self.record_id}: {self.field} {said_value(self.old)} -> {said_value(self.new)}"


def said_value(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def changes_of(state: State, final: State, free: FreeFields) -> list[Change] | None:
    """The plan's changes, or None when one cannot be said and checked: a field of an existing record (a scalar,
    or any change of a free field), or a record added to a collection keyed by id (its fields that are not free);
    not a record removed, a list changed in a field that is not free, a change outside the records."""
    found: list[Change] = []
    for change in diff_states(state, final):
        path = change.path
        if len(path) == 2 and change.op == "added" and isinstance(change.new, dict) and isinstance(
                state.get(str(path[0])), dict):
            collection, key = str(path[0]), str(path[1])
            kept = {f: v for f, v in change.new.items() if free.reason([collection, key, f]) is None}
            found.append(Change(collection, key, "", None, kept, False, added=True))
            continue
        if len(path) < 3 or not all(isinstance(p, str) for p in path[:3]):
            return None
        collection, key, field = (str(p) for p in path[:3])
        is_free = free.reason(path) is not None or free.reason(path[:3]) is not None
        scalar = len(path) == 3 and change.op == "changed" and (change.new is None or isinstance(change.new, _SCALARS))
        held = state.get(collection)
        if not (is_free or scalar) or not isinstance(held, dict) or key not in held:
            return None
        if len(path) == 3 or not any((c.collection, c.record_id, c.field) == (collection, key, field) for c in found):
            found.append(Change(collection, key, field, _field(state, collection, key, field),
                                _field(final, collection, key, field), is_free))
    return found


def _field(state: State, collection: str, key: str, field: str) -> Any:
    records_ = state.get(collection)
    record = records_.get(key) if isinstance(records_, dict) else None
    return record.get(field) if isinstance(record, dict) else None


def _shape(value: str) -> str:
    """A pattern of the id's shape: its letters and signs as they are, each run of digits any digits ("RF-307" ->
    `RF\\-\\d+`), so the next id the system chooses matches and a mangled one ("RF-307-x") does not."""
    return "".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", value) if part)


def _added_source(collection: str, expected: dict[str, Any], shaped: dict[str, str]) -> str:
    """The validator of an added record: a record of `collection` the initial state lacks, with these fields, and
    the field holding its id of the shape the system's ids have (`shaped`: field -> pattern)."""
    return ("import re\n\n\n"
            "def check_func(final_state):\n"
            f"    records = final_state.get({collection!r})\n"
            f"    before = initial_state.get({collection!r}) or {{}}\n"
            f"    expected = {expected!r}\n"
            f"    shaped = {shaped!r}\n"
            "    if not isinstance(records, dict):\n"
            "        return False\n"
            "    for key, record in records.items():\n"
            "        if key not in before and isinstance(record, dict) and all(\n"
            "                record.get(field) == value for field, value in expected.items()) and all(\n"
            "                isinstance(record.get(field), str) and re.fullmatch(pattern, record[field])\n"
            "                for field, pattern in shaped.items()):\n"
            "            return True\n"
            "    return False\n")


def _own(change: Change) -> dict[str, Any]:
    """An added record's fields that are not free, less the id the system chose (the state check pairs added
    records by content: an agent's record under the next id is the same record)."""
    return {f: v for f, v in change.new.items() if v != change.record_id}


def _added_item(change: Change, said: Sequence[str]) -> str:
    """"Has a new appointments record been added with patient_id 'PT-1001' and slot_id '…'?": the fields whose
    values the plan's arguments say (at most 3; else the first two)."""
    own = _own(change)
    fields = [(f, v) for f, v in own.items() if isinstance(v, str) and v in said][:3] or \
        [(f, v) for f, v in own.items() if isinstance(v, _SCALARS)][:2]
    return (f"Has a new {change.collection} record been added with "
            + " and ".join(f"{f} '{v}'" for f, v in fields) + "?")


def checklist_for(found: Sequence[Change], said: Sequence[str] = ()) -> list[ChecklistItem]:
    """One [change] item per checked (not free) scalar change, and one per added record (`said`: the plan's text
    arguments, which name it), their validators written by code."""
    items: list[ChecklistItem] = []
    for change in (c for c in found if c.added):
        items.append(ChecklistItem(id=f"c{len(items) + 1}", description=_added_item(change, said),
                                   validator=_added_source(change.collection, _own(change), {
                                       f: _shape(v) for f, v in change.new.items() if v == change.record_id})))
    for change in (c for c in found if not c.added and not c.free and (c.new is None or isinstance(c.new, _SCALARS))):
        value = "no value" if change.new is None else f"'{str(change.new).lower()}'" if isinstance(
            change.new, bool) else f"'{change.new}'"
        claim = FieldClaim(change.collection, change.record_id, None, change.field, change.new)
        items.append(ChecklistItem(id=f"c{len(items) + 1}", description=f"Has {change.collection} "
                                   f"{change.record_id} {change.field} {value}?", validator=claim.source()))
    return items
