"""Does a task name anything of its initial state?

A task that names no record cannot be solved but by luck: the embedded 1.5B model wrote "cancel an existing
appointment" while its plan and validators picked appointment "1". The gate cannot see that (validators and
plan agree). This check is lenient on purpose: a task passes when it contains the key of any record of the
initial state or a value that only one record of its collection has (a name, an email, a date). A good task
often lets the assistant find the records it changes ("the first open slot", "Marta's order"), so asking it
to name those very records would refuse good tasks; naming nothing at all is what gives the guess away.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envscaler_mcp.qa.record_index import StateIndex, Text, index_of, keyed, positions, text_of


def _mentions_key(text: Text, collection: str, key: str) -> bool:
    """A numeric key counts only after a word that says it is an id ("appointment 4", "ID 4", "#4"), not
    as a count ("30 appointments")."""
    if not key.isdigit():
        return text.mentions(key)
    if key not in text.text:  # the pattern below ends with the key itself
        return False
    stem = re.escape(collection.lower().rstrip("s")[:6])
    return re.search(rf"(?:\bids?\b|#|\bno\b\.?|\bnumbers?\b|\b{stem}\w*)\W*(?:\w+\W+){{0,2}}{key}(?![\w-])",
                     text.text) is not None


def _keys_named(text: Text, name: str, index: StateIndex) -> set[str]:
    """The keys of `name`'s records that the text states (worked out once per index and text: every question below
    asks it)."""
    found = index.keys_named.get((text.text, name))
    if found is None:
        found = index.keys_named[text.text, name] = {key for key in index.names[name] if _mentions_key(text, name, key)}
    return found


def named_records(state: Mapping[str, Any] | StateIndex, task: str) -> set[tuple[str, str]]:
    """(collection, key) of every record the task names: by its key, or by a value (or a word of a short one: `record_index.words_of`) that only
    this record of its collection has. `state` may be given as its StateIndex."""
    text, index = text_of(task), index_of(state)
    return {(name, key) for name in index.names for key in _keys_named(text, name, index) | index[name].named(text, "own")}


def names_a_record(state: Mapping[str, Any], task: str) -> bool:
    """The task contains the key of a record of the initial state, or a value that only one record of its
    collection has; True for a state without keyed collections (nothing to check)."""
    return not keyed(state) or bool(named_records(state, task))


def records_named(state: Mapping[str, Any] | StateIndex, task: str) -> dict[str, set[str]]:
    """{collection: keys of the records the task names}: by key, or by a whole value that only that record of
    its collection has (a date, a name, a title; single words of longer values are not enough here)."""
    text, index = text_of(task), index_of(state)
    named = {name: _keys_named(text, name, index) | index[name].named(text, "whole") for name in index.names}
    return {name: keys for name, keys in named.items() if keys}


def keys_named(state: Mapping[str, Any] | StateIndex, task: str) -> dict[str, set[str]]:
    """{collection: keys of its records the task states literally (as ids)}."""
    text, index = text_of(task), index_of(state)
    named = {name: _keys_named(text, name, index) for name in index.names}
    return {name: set(keys) for name, keys in named.items() if keys}


def contradicting_names(state: Mapping[str, Any] | StateIndex, task: str) -> list[tuple[str, str, str, str]]:
    """(collection, value, key, owner) where the task names a record two ways side by side that are two records:
    a value only `owner` has, next to another record's id ("Ben Okoro (U01)" when Ben Okoro is U08; "U01, Ben
    Okoro"). Only ids with a digit, and only the two separated by nothing but spaces and punctuation."""
    text, index = text_of(task), index_of(state)
    found: list[tuple[str, str, str, str]] = []
    for name, collection in index.names.items():
        ids = [(span, key) for key in collection if text.mentions(key) and any(ch.isdigit() for ch in key)
               for span in positions(text.text, key)]
        if not ids:
            continue
        for value, owner in index[name].named(text, "values"):
            for start, end in positions(text.text, value):
                for (k_start, k_end), key in ids:
                    gap = text.text[end:k_start] if k_start >= end else text.text[k_end:start]
                    if key != owner and len(gap) <= 3 and not any(ch.isalnum() for ch in gap):
                        found.append((name, value, key, owner))
    return sorted(set(found))


def keyed_collections(state: Mapping[str, Any] | StateIndex) -> set[str]:
    """Names of the state's collections of records keyed by id."""
    return set(state.names if isinstance(state, StateIndex) else keyed(state))
