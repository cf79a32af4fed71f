"""What an initial-state answer cut off at the length limit (or broken at its end) still holds.

A small model asked for a few records per collection may loop on one collection until its answer is cut off
(the embedded 1.5B model on `library_loans` wrote "The Chronicles of Narnia" book after book for 4,096 tokens),
so the answer is no JSON at all. Its prefix is read event by event (ijson) up to where it stops; the scalar
attributes it completed and the complete records of its collections are kept, and the next call asks only for
the attributes still missing.
"""

from __future__ import annotations

import io
from typing import Any

import ijson

from envscaler_mcp._json import State
from envscaler_mcp.skeleton.build import validate_state
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.scen.state_prompt import record_bounds
from envscaler_mcp.synth.skel.checkstage import initial_state_schema

_CLOSE = {"end_map", "end_array"}
_OPEN = {"start_map", "start_array"}


class _Builder:
    """Builds one top-level attribute's value from parser events, noting which of its entries are complete."""

    def __init__(self, first: str) -> None:
        self.value: Any = {} if first == "start_map" else []
        self.stack: list[Any] = [self.value]
        self.key: list[str | None] = [None]
        self.complete: list[Any] = []  # keys (map) or indexes (array) of the entries that closed

    def _put(self, value: Any) -> None:
        parent, key = self.stack[-1], self.key[-1]
        if isinstance(parent, dict):
            parent[key] = value
        else:
            parent.append(value)

    def _entry_done(self) -> None:
        if len(self.stack) == 1:
            parent = self.stack[0]
            self.complete.append(self.key[0] if isinstance(parent, dict) else len(parent) - 1)

    def event(self, event: str, value: Any) -> bool:
        """Take one event; True when the attribute's value itself closed."""
        if event == "map_key":
            self.key[-1] = value
        elif event in _OPEN:
            child: Any = {} if event == "start_map" else []
            self._put(child)
            self.stack.append(child)
            self.key.append(None)
        elif event in _CLOSE:
            self.stack.pop()
            self.key.pop()
            if not self.stack:
                return True
            self._entry_done()
        else:
            self._put(value)
            self._entry_done()
        return False

    def entries(self) -> Any:
        """The complete entries only (a cut record left out)."""
        if isinstance(self.value, dict):
            complete = set(self.complete)
            return {k: v for k, v in self.value.items() if k in complete}
        return self.value[:len(self.complete)]


def _prefix_values(text: str) -> tuple[dict[str, Any], dict[str, _Builder]]:
    """Read the JSON object at the start of `text` (from its first '{') as far as it goes: the top-level values
    that closed, and the builders of the one left open (at most one: where the answer stopped)."""
    done: dict[str, Any] = {}
    open_: dict[str, _Builder] = {}
    start = text.find("{")
    if start < 0:
        return done, open_
    key: str | None = None
    builder: _Builder | None = None
    try:
        for event, value in ijson.basic_parse(io.BytesIO(text[start:].encode()), use_float=True):
            if builder is not None and key is not None:
                if builder.event(event, value):
                    done[key], builder = builder.value, None
                    del open_[key]
                continue
            if event == "map_key":
                key = value
            elif event in _OPEN and key is not None:
                builder = open_[key] = _Builder(event)
            elif event in _CLOSE:
                break  # the object closed: a complete answer (its parse failed elsewhere)
            elif key is not None:
                done[key] = value
    except ijson.JSONError:
        pass  # the answer stops (or breaks) here: keep what came before
    return done, open_


def _is_collection(schema: Any) -> bool:
    """A keyed collection or a list (records), not an object of fixed fields."""
    if not isinstance(schema, dict):
        return False
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return "array" in kinds or ("object" in kinds and "properties" not in schema)


def _first(value: Any, most: int) -> Any:
    return dict(list(value.items())[:most]) if isinstance(value, dict) else value[:most]


def salvage_state(skeleton: EnvSkeleton, text: str, pending: list[str], records: str) -> State:
    """The attributes of `pending` that a cut or broken state answer completed: scalars and objects it closed,
    collections it closed or wrote at least the fewest records asked for of (complete records only), each
    collection cut to the most records asked for. An attribute whose salvaged value does not fit its schema is
    not kept (it is asked for again). Empty when no record or object is usable: scalars and empty collections
    alone (the date an answer began with) are no reason to leave the usual retry, which shows the cut answer and
    says it was cut."""
    low, high = record_bounds(records)
    schemas = {a.name: a.json_schema for a in skeleton.state}
    done, open_ = _prefix_values(text)
    got: State = {}
    for name in pending:
        collection = _is_collection(schemas.get(name))
        if name in done:
            got[name] = _first(done[name], high) if collection and isinstance(done[name], dict | list) else done[name]
        elif name in open_ and collection and len(entries := open_[name].entries()) >= max(low, 1):
            got[name] = _first(entries, high)
    got = {name: value for name, value in got.items() if not validate_state(skeleton, {name: value})}
    return got if any(isinstance(value, dict | list) and value for value in got.values()) else {}


def merge_state(skeleton: EnvSkeleton, kept: State, answer: State) -> State:
    """The kept attributes over the answer's, in the skeleton's order (then any other key of the answer, which
    the state check refuses)."""
    merged = {**answer, **kept}
    order = [a.name for a in skeleton.state if a.name in merged]
    return {**{name: merged[name] for name in order}, **merged}


def rest_schema(skeleton: EnvSkeleton, pending: list[str]) -> dict[str, Any]:
    """Structured-output schema of a follow-up answer: only the attributes still missing, all required."""
    schema = initial_state_schema(skeleton)
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k in pending},
            "required": list(pending)}

