"""Records of a generated state that a scenario step is pointed at, chosen without the model.

A small model asked for "a task grounded in the initial state" often writes a task about the system in general
(no record named), and a plan refused by a rule ("ticket INC-3002 is already in_progress") is repaired blind
unless the record is shown. Here: the records a task is asked to be about (open ones, where the state marks a
status, so the rules still allow a change), and the records a refused call names (their state before the call).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.qa.record_index import leaves

# Status values after which most systems allow no further change of the record.
SETTLED = frozenset(
    "cancelled canceled closed completed complete departed arrived landed deleted returned resolved refunded "
    "delivered lost archived expired done rejected fulfilled trashed inactive suspended no_show paid "
    "discontinued revoked".split())
_SHOWN_CHARS = 360


@dataclass(frozen=True)
class Anchor:
    """One record: the collection (top-level attribute) it is in, its id, and its fields."""

    collection: str
    record_id: str
    record: dict[str, Any]

    def line(self) -> str:
        """`collection id: {fields}` as a prompt shows it (long records cut)."""
        text = json.dumps(self.record, ensure_ascii=False, default=str)
        if len(text) > _SHOWN_CHARS:
            text = text[:_SHOWN_CHARS] + " …"
        return f"{self.collection} {self.record_id}: {text}"


def records(state: State) -> list[Anchor]:
    """Every record of the state: the dict values of a collection keyed by id, or the dicts of a list (their id
    read from an `id` or `*_id` field)."""
    found: list[Anchor] = []
    for name, value in state.items():
        if isinstance(value, dict):
            found += [Anchor(name, str(key), rec) for key, rec in value.items() if isinstance(rec, dict)]
        elif isinstance(value, list):
            for rec in value:
                if isinstance(rec, dict) and (rid := _own_id(rec)) is not None:
                    found.append(Anchor(name, rid, rec))
    return found


def _own_id(record: dict[str, Any]) -> str | None:
    if isinstance(record.get("id"), str | int):
        return str(record["id"])
    ids = [k for k, v in record.items() if k.endswith("_id") and isinstance(v, str | int)]
    return str(record[ids[0]]) if ids else None


def status_of(record: dict[str, Any]) -> str | None:
    value = record.get("status", record.get("state"))
    return value.strip().lower().replace(" ", "_").replace("-", "_") if isinstance(value, str) else None


def _id_field(anchor: Anchor) -> str | None:
    """The field of a record that holds its id (`ticket_id` for ticket INC-1), if any."""
    return next((k for k, v in anchor.record.items() if str(v) == anchor.record_id and isinstance(v, str | int)),
                None)


def _parameters(schemas: Sequence[Mapping[str, Any]]) -> Counter[str]:
    """How many of the tools take each top-level parameter name."""
    return Counter(name for schema in schemas for name in (schema.get("properties") or {}))


_NEGATION = re.compile(r"\b(?:not|never|no|cannot|can't)\b", re.I)


def parameter_rules(changers: Sequence[tuple[Mapping[str, Any], str]]) -> dict[str, str]:
    """{parameter name: the descriptions of the state-changing tools that take it} from (input schema,
    description) pairs: the rules a record is changed under, by the field its id goes in."""
    rules: dict[str, list[str]] = {}
    for schema, description in changers:
        for name in schema.get("properties") or {}:
            rules.setdefault(name, []).append(description)
    return {name: "\n".join(texts) for name, texts in rules.items()}


def allowed(anchor: Anchor, rules: Mapping[str, str]) -> bool:
    """Whether a rule of the state-changing tools that take this record's id names its status without a
    negation ("Asset must be in_stock", "Only in_use assets can be returned": in_use is allowed a change, retired
    is not, since "The asset must not be in use" names it only to forbid)."""
    status, field = status_of(anchor.record), _id_field(anchor)
    if status is None or field is None or field not in rules:
        return False
    sentences = re.split(r"(?<=[.;:])\s+|\n", rules[field])
    return any(re.search(rf"(?<![a-z0-9]){re.escape(status)}(?![a-z0-9])",
                         sentence.lower().replace("-", "_").replace(" ", "_")) and not _NEGATION.search(sentence)
               for sentence in sentences)


def task_anchors(state: State, index: int, changers: Sequence[Mapping[str, Any]] = (), limit: int = 2,
                 rules: Mapping[str, str] | None = None) -> list[Anchor]:
    """The records item `index` is asked to be about: first from the collections whose id field the most
    state-changing tools take as a parameter (`changers`: their input schemas; `ticket_id` for the tickets),
    then from the collections whose records carry a status (the ones a workflow changes); in each, a record
    still open (its status not a settled one) and, where some are, one whose status the tools' `rules`
    (`parameter_rules`) name as allowing a change, rotating with `index` so items of one environment differ;
    at most one per collection and `limit` in all. Collections no changing tool names and without status
    fields are used only when no other is; an empty state gives none."""
    by_collection: dict[str, list[Anchor]] = {}
    for anchor in records(state):
        by_collection.setdefault(anchor.collection, []).append(anchor)
    taken = _parameters(changers)
    open_ = {c: [r for r in rs if status_of(r.record) not in SETTLED] for c, rs in by_collection.items()}

    def score(collection: str) -> tuple[int, bool]:
        fields = {_id_field(r) for r in by_collection[collection]} - {None}
        return (max((taken[f] for f in fields if f), default=0),
                any(status_of(r.record) for r in by_collection[collection]))

    ranked = sorted((c for c in by_collection if open_[c]), key=score, reverse=True)
    if not ranked:
        return []
    best = score(ranked[0])
    strong = [c for c in ranked if score(c) > (0, False)] or ranked
    top = [c for c in strong if score(c) == best]
    first = top[index % len(top)]
    names = [first] + [c for c in strong if c != first]
    pools = {c: [r for r in open_[c] if allowed(r, rules)] or open_[c] if rules else open_[c] for c in names}
    return [pools[c][index % len(pools[c])] for c in names[:limit]]


def example_items(state: State, limit: int = 2) -> list[str]:
    """Checklist items in the wanted shape, made of this state's own records, for the prompt to show (a fixed
    example from another system gets copied by a small model): "Has <collection> <id> <field> '<value>'?", where
    another record of the collection has that value and this one another (so the item is not true already).
    Status fields, or other short text fields where no status differs; at most one per collection and `limit`
    in all."""
    by_collection: dict[str, list[Anchor]] = {}
    for anchor in records(state):
        by_collection.setdefault(anchor.collection, []).append(anchor)
    for statuses in (True, False):  # other text fields only where no collection has a status that differs
        found = [item for collection, anchors in by_collection.items()
                 if (item := _example(collection, anchors, statuses)) is not None]
        if found:
            return found[:limit]
    return []


def _example(collection: str, anchors: list[Anchor], statuses: bool) -> str | None:
    fields = sorted(k for k in {k for a in anchors for k, v in a.record.items() if isinstance(v, str)
                                and 0 < len(v) <= 40} if (k in ("status", "state")) == statuses)
    for field in fields:
        for anchor in anchors:
            mine = anchor.record.get(field)
            if not isinstance(mine, str) or mine == anchor.record_id or field == _id_field(anchor):
                continue
            other = next((a.record[field] for a in anchors if isinstance(a.record.get(field), str)
                          and a.record[field] != mine and a.record[field] != a.record_id), None)
            if other is not None:
                return f"Has {collection} {anchor.record_id} {field} '{other}'?"
    return None


def _values(arguments: Any) -> Iterable[str]:
    return (str(v) for v in leaves(arguments) if isinstance(v, str | int) and not isinstance(v, bool))


def named_records(state: State, arguments: Any, limit: int = 4) -> list[Anchor]:
    """The records whose id is one of the argument values (a refused call's records), at most `limit`."""
    wanted = set(_values(arguments))
    return [a for a in records(state) if a.record_id in wanted][:limit]


def asked_for(state: State, anchor: Anchor, refusal: str, limit: int = 3) -> tuple[str, list[str]] | None:
    """Records of `anchor`'s collection whose status a refusal of a call on it names, other than its own
    ("Asset AST-2001 is in_use; only in-stock assets can be issued" -> in_stock: AST-2003, AST-2007), or None:
    (the status, at most `limit` record ids)."""
    own = status_of(anchor.record)
    said = refusal.lower().replace("-", "_").replace(" ", "_")
    peers = [a for a in records(state) if a.collection == anchor.collection and a.record_id != anchor.record_id]
    for status in dict.fromkeys(s for a in peers if (s := status_of(a.record)) and s != own):
        if re.search(rf"(?<![a-z0-9]){re.escape(status)}(?![a-z0-9])", said):
            return status, [a.record_id for a in peers if status_of(a.record) == status][:limit]
    return None
