"""Success-path probes built from the records of a state, without a model.

Each probe is a call whose arguments come from one record present in the state (its key for the parameter
that names its collection, its own field values for parameters of the same name), so a tool that can act on
existing records is seen doing so, and a lookup that compares the wrong things (a patient id with appointment
ids, a location's name with its id) is seen never to succeed on any of them.

`varied_state` renumbers the keys that two collections share (appointment 1, doctor 1, location 1) and the
fields that refer to them, keeping their format, so a lookup in the wrong collection cannot succeed by a
coincidence of numbering.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.skeleton.models import ToolSpec

MAX_PROBES = 80  # per tool


@dataclass(frozen=True)
class Probe:
    """One call to try: the tool, its arguments, and the collection and key of the record they came from."""

    tool: str
    arguments: JSONObject
    record: tuple[str, str] | None = None


def collections(state: Mapping[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """The keyed collections of a state: top-level objects whose values are all records (objects)."""
    return {name: value for name, value in state.items()
            if isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values())}


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _refers_to(name: str, collection: str, records: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether a parameter or field `name` holds keys of `collection` (`order_id`, `order_ids`, `orders`,
    `new_slot_id`, or the field holding each record's own key)."""
    return name in key_fields(collection, records) or _names(name, collection)


def key_fields(collection: str, records: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The field(s) holding each record's own key: among the fields equal to the key in every record, those
    whose name says so (`id`, `order_id` in orders), else the only one (`isbn` in books)."""
    equal = [f for f in next(iter(records.values())) if all(r.get(f) == k for k, r in records.items())]
    return {f for f in equal if f == "id" or _names(f, collection)} or set(equal if len(equal) == 1 else [])


def _names(name: str, collection: str) -> bool:
    """Whether `name` reads as an id (or ids) of `collection` by its words alone."""
    base = re.sub(r"_ids?$", "", name)
    if base == name and not name.endswith("s"):
        return False
    stem, own = _stem(base), _stem(collection)
    return stem == own or stem.endswith("_" + own) or (len(own) > 3 and own.endswith("_" + stem))


def collection_of(name: str, state: Mapping[str, Any]) -> str | None:
    """The collection whose keys parameter `name` names, if any."""
    return next((c for c, records in collections(state).items() if _refers_to(name, c, records)), None)


def _renumber(key: str, offset: int) -> str:
    match = re.fullmatch(r"(.*?)(\d+)", key)
    if match is None:
        return f"{key}-{offset // 1000}"
    digits = match.group(2)
    return match.group(1) + str(int(digits) + offset).zfill(len(digits))


def varied_state(state: State) -> State:
    """A copy of `state` in which no two collections share a key (keys renumbered, same format), and ids of
    things without a collection of their own (a `patient_id` with no patients) renumbered apart as well."""
    keyed = collections(state)
    seen: set[str] = set()
    renames: dict[str, dict[str, str]] = {}  # collection or id field -> old -> new
    for n, (name, records) in enumerate(keyed.items()):
        if seen & set(records):
            renames[name] = {k: _renumber(k, 1000 * (n + 1)) for k in records}
        seen |= set(renames.get(name, {}).values()) or set(records)
    loose = sorted({f for records in keyed.values() for r in records.values() for f in r
                    if f.endswith("_id") and collection_of(f, state) is None})
    for m, field in enumerate(loose, start=len(keyed) + 1):
        values = {str(r[field]) for records in keyed.values() for r in records.values() if isinstance(r.get(field), str)}
        owners = [c for c, records in keyed.items() if values <= set(records)]
        if len(owners) == 1:  # a reference by value (`parent_id` holding folder keys): renamed with its collection
            renames[field] = renames.get(owners[0], {})
        elif values & seen:  # ids of something kept nowhere that happen to equal other keys
            renames[field] = {v: _renumber(v, 1000 * m) for v in values}
    if not renames:
        return state
    varied = copy.deepcopy(state)
    for name, records in collections(varied).items():
        own_fields = key_fields(name, records)
        for record in records.values():
            for field, value in list(record.items()):
                mapping = renames.get(name if field in own_fields else collection_of(field, state) or field, {})
                if isinstance(value, str):
                    record[field] = mapping.get(value, value)
                elif isinstance(value, list):
                    record[field] = [mapping.get(v, v) if isinstance(v, str) else v for v in value]
        varied[name] = {renames.get(name, {}).get(k, k): r for k, r in records.items()}
    return varied


def later_state(state: State, days: int = 365) -> State | None:
    """A copy of `state` with its top-level dates (`today`, `current_date`, ...) `days` later, for tools that act
    on what time makes due (expired trash, overdue loans); None when the state keeps no date."""
    later = dict(state)
    for name, value in state.items():
        if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            later[name] = (date.fromisoformat(value) + timedelta(days=days)).isoformat()
    return later if later != state else None


def _field_values(state: Mapping[str, Any], field: str) -> list[Any]:
    values: list[Any] = []
    for records in collections(state).values():
        for record in records.values():
            value = record.get(field)
            if value not in (None, "", [], {}) and value not in values:
                values.append(value)
    return values


def _fits(value: Any, schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    checks = {"string": isinstance(value, str), "integer": isinstance(value, int) and not isinstance(value, bool),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool),
              "boolean": isinstance(value, bool), "array": isinstance(value, list), "object": isinstance(value, dict)}
    return kind is None or any(checks.get(str(k), False) for k in kinds)


def _fallback(name: str, schema: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return 1
    if kind == "array":
        return []
    if kind == "object":
        return {}
    for value in _field_values(state, name.split("_")[-1]):
        if isinstance(value, str):
            return value
    return f"probe {name.replace('_', ' ')}"


def _value(name: str, schema: Mapping[str, Any], state: Mapping[str, Any], anchor: tuple[str, str, dict[str, Any]],
           change: bool) -> Any:
    """A value for parameter `name`, from the anchor record where it can (a different one from other records
    or the schema's choices for a state change of a plain field, which must change something)."""
    collection, key, record = anchor
    owner = collection_of(name, state)
    if owner is not None:
        if owner == collection:
            return [key] if schema.get("type") == "array" else key
        linked = record.get(name) or record.get(re.sub(r"^[a-z]+_(?=\w+_id$)", "", name))
        keys = list(collections(state)[owner])
        value = linked if isinstance(linked, str) and linked in keys else keys[0]
        return [value] if schema.get("type") == "array" else value
    choices = [v for v in [*(schema.get("enum") or []), *_field_values(state, name)] if _fits(v, schema)]
    current = record.get(name)
    if change and current is not None:
        other = next((v for v in choices if v != current), None)
        if other is not None:
            return other
    if current is not None and _fits(current, schema):
        return current
    return choices[0] if choices else _fallback(name, schema, state)


def _anchors(spec: ToolSpec, state: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Records to build calls from: those of the collections the tool's parameters name, in parameter order,
    then (for a tool naming none) every record."""
    keyed = collections(state)
    named = [c for c in (collection_of(p, state) for p in spec.parameters()) if c is not None]
    for collection in dict.fromkeys(named or list(keyed)):
        for key, record in keyed[collection].items():
            yield collection, key, record


def probes_for(spec: ToolSpec, state: Mapping[str, Any], limit: int = MAX_PROBES) -> list[Probe]:
    """Calls of `spec` built from the records of `state`: per anchor record, the required parameters alone and
    with the optional ones filled too; distinct calls only, at most `limit`."""
    params = spec.parameters()
    required = set(spec.required_parameters())
    change = spec.kind == "state_change"
    found: list[Probe] = []
    if not required:
        found.append(Probe(spec.name, {}))
    for collection, key, record in _anchors(spec, state):
        for names in ([p for p in params if p in required], list(params)):
            arguments = {p: _value(p, params[p], state, (collection, key, record), change) for p in names}
            probe = Probe(spec.name, arguments, (collection, key))
            if all(p.arguments != arguments for p in found):
                found.append(probe)
            if len(found) >= limit:
                return found
    return found
