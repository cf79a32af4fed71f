"""Records of a model's initial state that point at a record the state does not have.

The embedded model wrote a `cloud_storage` state whose user U01 has plan "business" while the state's plans are
"free" and "standard": every call about U01 then crashed (`KeyError: 'business'`), and the scenario was dropped
at the gate, forty minutes later, for what the state step can see. A field is read as pointing into a keyed
collection (a dict of records) when its name says so ("plan" or "plan_id" into "plans", "owner" into "owners")
and at least one of its values is a key there, or, whatever its name, when at least two distinct values are keys
there. A value of such a field (or an item of a list of them) is dangling when it is a key of no collection of
the state at all: an item that may point into two collections (a share's `item_id`: a folder or a file) is never
reported. Through a field whose name does not say so, only a value shaped like the collection's keys is (a
comment's author "system" beside employees E1001-E1006 is a sentinel, "E1009" would be a missing employee).
Values that are no text, empty or None ("no parent") are not references.

`without_dangling` is the mend the scenario pipeline's state step makes before asking the model again: the
records naming missing records are dropped when each of their collections keeps one and nothing names them
(no string of the rest of the state, at any depth, is a dropped record's key). When that cannot be done,
`repointed` points each such field at a record the state has.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from envscaler_mcp.qa.record_index import every_text, keyed

_LIMIT = 8  # dangling values reported per answer


@dataclass(frozen=True)
class Dangling:
    """A record field naming a record the state lacks: `collection[key].field` is `value`, read as a key of
    `target`."""

    collection: str
    key: str
    field: str
    value: str
    target: str


def dangling_references(state: Mapping[str, Any]) -> list[str]:
    """One line per record field that names a record no collection of `state` has ([] when none)."""
    collections = keyed(state)
    return [f"{d.collection}[{d.key!r}].{d.field} is {d.value!r}, but {d.target} has no record {d.value!r} "
            f"(its keys: {', '.join(sorted(map(str, collections[d.target]))[:6])})" for d in dangling(state)[:_LIMIT]]


def dangling(state: Mapping[str, Any]) -> list[Dangling]:
    """Every record field of `state` that names a record no collection of it has."""
    collections = keyed(state)
    every_key = {str(key) for records in collections.values() for key in records}
    found: list[Dangling] = []
    for name, records in collections.items():
        fields: dict[str, list[tuple[str, str]]] = {}
        for key, record in records.items():
            for field, value in record.items():
                fields.setdefault(field, []).extend((str(key), v) for v in _texts(value))
        for field, pairs in fields.items():
            target = _target(field, {v for _, v in pairs}, collections, own=name)
            if target is None:
                continue
            shapes = None if _names(field, target) else {_shape(str(k)) for k in collections[target]}
            found += [Dangling(name, key, field, value, target) for key, value in pairs
                      if value not in every_key and (shapes is None or _shape(value) in shapes)]
    return found


def without_dangling(state: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """`state` without its records that name records it lacks, and what was dropped, by collection ("dropped 2
    of 4 tickets naming bookings the state lacks (T-10003 on BK-2003, …)"); None when there are none, when a
    collection would be left without records, or when some record then names a dropped one (the model is asked
    instead)."""
    found = dangling(state)
    if not found:
        return None
    doomed: dict[str, dict[str, list[Dangling]]] = {}
    for item in found:
        doomed.setdefault(item.collection, {}).setdefault(item.key, []).append(item)
    collections = keyed(state)
    if any(len(keys) >= len(collections[name]) for name, keys in doomed.items()):
        return None
    mended = dict(state)
    for name, keys in doomed.items():
        mended[name] = {key: record for key, record in collections[name].items() if str(key) not in keys}
    gone = {key for keys in doomed.values() for key in keys}
    if dangling(mended) or any(value in gone for value in every_text(mended)):
        return None  # something names a dropped record (a payment on a dropped ticket, a booking's history)
    return mended, {name: _dropped(name, keys, len(collections[name])) for name, keys in doomed.items()}


def repointed(state: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """`state` with each field that names a record it lacks pointed at a record it has (the one most records of
    its collection name through that field; only where some record is named by two, so that sharing one is
    normal: users on a plan, not appointments on a slot), and what was changed, by collection ("pointed 1 of 4 users at plans the state has (U01
    plan 'business' -> 'free')"); None when there is nothing to mend, or when a missing record is named inside
    a list or by a record that could not then be mended. The mend `without_dangling` cannot make: the 1.5B model's
    `cloud_storage` states gave a user plan "business" beside plans "free" and "standard", and a root folder
    FLD-004 beside FLD-001-FLD-003, and every such user is named by files and folders, so it cannot be dropped."""
    found = dangling(state)
    if not found:
        return None
    mended = json.loads(json.dumps(state))
    collections = keyed(mended)
    changed: dict[str, list[str]] = {}
    for item in found:
        record = collections[item.collection][item.key]
        if record.get(item.field) != item.value or not collections.get(item.target):
            return None  # named inside a list (a share's members) or an empty target: left to the model
        named = Counter(str(r.get(item.field)) for r in collections[item.collection].values()
                        if str(r.get(item.field)) in collections[item.target])
        if not named or named.most_common(1)[0][1] < 2:
            return None  # no record is named by two: one each (an appointment's slot), left to the model
        first = named.most_common(1)[0][0]
        record[item.field] = first
        changed.setdefault(item.collection, []).append(f"{item.key} {item.field} {item.value!r} -> {first!r}")
    if dangling(mended):
        return None
    return mended, {name: (f"pointed {len(lines)} of {len(collections[name])} {name} at records the state has ("
                           + ", ".join(lines[:6]) + (", …)" if len(lines) > 6 else ")"))
                    for name, lines in changed.items()}


def _dropped(name: str, keys: Mapping[str, list[Dangling]], had: int) -> str:
    targets = sorted({d.target for found in keys.values() for d in found})
    named = ", ".join(f"{key} on {', '.join(d.value for d in found)}" for key, found in list(keys.items())[:6])
    return (f"dropped {len(keys)} of {had} {name} naming {' and '.join(targets)} the state lacks ({named}"
            + (", …)" if len(keys) > 6 else ")"))


def _texts(value: Any) -> Iterator[str]:
    for item in value if isinstance(value, list) else (value,):
        if isinstance(item, str) and item.strip():
            yield item


def _target(field: str, values: set[str], collections: Mapping[str, Mapping[str, Any]], own: str) -> str | None:
    """The collection a field's values point into, or None when they are not read as references."""
    for name, records in collections.items():
        keys = {str(k) for k in records}
        hits = len(values & keys)
        if hits and _names(field, name):
            return name
        if hits >= 2 and name != own:
            return name
    return None


def _shape(key: str) -> str:
    """A key with its digits left out: "E1001" -> "E", "FLD-004" -> "FLD-"; a word stays itself."""
    return re.sub(r"\d+", "", key)


def _names(field: str, collection: str) -> bool:
    """Whether a field's name says it holds keys of `collection` ("plan", "plan_id", "plans" into "plans")."""
    stem = field.lower().removesuffix("_ids").removesuffix("_id")
    plural = collection.lower()
    return stem in (plural, plural.removesuffix("s"), plural.removesuffix("es"))
