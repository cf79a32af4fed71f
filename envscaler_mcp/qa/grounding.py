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
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_MIN_VALUE = 3  # shorter values ("A", "12") are not taken as naming a record


def _collections(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level attributes that map keys to records (dicts)."""
    return {name: value for name, value in state.items()
            if isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values())}


def _strings(record: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    """(field, value) for the record's string and number values, nested lists of them included."""
    for field, value in record.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                yield field, str(item)


def _joins(char: str) -> bool:
    """A character that continues a word or an id (regex \\w, or '-')."""
    return char.isalnum() or char in "_-"


def mentions(text: str, value: str) -> bool:
    """`value` (lower-cased) occurs in `text` with no word character or '-' on either side."""
    return next(_positions(text, value), None) is not None


def _positions(text: str, value: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each occurrence of `value` (lower-cased) in `text` with no word character or '-' on either
    side. A substring search: a regex compiled per value overflowed re's cache on catalogs of thousands of values."""
    needle = value.lower()
    start = text.find(needle)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not _joins(text[start - 1])) and (end == len(text) or not _joins(text[end])):
            yield start, end
        start = text.find(needle, start + 1)


def _distinct(collection: Mapping[str, Any]) -> set[str]:
    """The values that only one record of the collection has in their field, and the words (4 letters or
    more) that only one record's values contain ("Moreno" of "Dr. Elena Moreno"): counted once per collection."""
    values: Counter[tuple[str, str]] = Counter()
    words: Counter[str] = Counter()
    for record in collection.values():
        pairs = set(_strings(record))
        values.update(pairs)
        words.update({word for _, value in pairs for word in _words(value)})
    return ({value for (_, value), n in values.items() if n == 1 and len(value) >= _MIN_VALUE}
            | {word for word, n in words.items() if n == 1})


def _words(value: str) -> set[str]:
    return {w for w in re.findall(r"[^\W\d_]{4,}", value.lower())}


def _mentions_key(text: str, collection: str, key: str) -> bool:
    """A numeric key counts only after a word that says it is an id ("appointment 4", "ID 4", "#4"), not
    as a count ("30 appointments")."""
    if not key.isdigit():
        return mentions(text, key)
    stem = re.escape(collection.lower().rstrip("s")[:6])
    return re.search(rf"(?:\bids?\b|#|\bno\b\.?|\bnumbers?\b|\b{stem}\w*)\W*(?:\w+\W+){{0,2}}{key}(?![\w-])",
                     text) is not None


def named_records(state: Mapping[str, Any], task: str) -> set[tuple[str, str]]:
    """(collection, key) of every record the task names: by its key, or by a value (or a word of one) that only
    this record of its collection has."""
    text = task.lower()
    found: set[tuple[str, str]] = set()
    for name, collection in _collections(state).items():
        distinct = _distinct(collection)
        for key, record in collection.items():
            values = {value for _, value in _strings(record)}
            own = {v for v in values if v in distinct} | {w for v in values for w in _words(v) if w in distinct}
            if _mentions_key(text, name, key) or any(mentions(text, value) for value in own):
                found.add((name, key))
    return found


def names_a_record(state: Mapping[str, Any], task: str) -> bool:
    """The task contains the key of a record of the initial state, or a value that only one record of its
    collection has; True for a state without keyed collections (nothing to check)."""
    return not _collections(state) or bool(named_records(state, task))


def records_named(state: Mapping[str, Any], task: str) -> dict[str, set[str]]:
    """{collection: keys of the records the task names}: by key, or by a whole value that only that record of
    its collection has (a date, a name, a title; single words of longer values are not enough here).

    Each record's values are listed once, and only whole values are counted: a whole value that is also a word
    only one record's values contain is held by that record alone, so it is already distinct as a value."""
    text = task.lower()
    named: dict[str, set[str]] = {}
    for name, collection in _collections(state).items():
        pairs = {key: set(_strings(record)) for key, record in collection.items()}
        counts = Counter(pair for held in pairs.values() for pair in held)
        distinct = {value for (_, value), n in counts.items() if n == 1 and len(value) >= _MIN_VALUE}
        keys = set()
        for key, held in pairs.items():
            if _mentions_key(text, name, key) or any(mentions(text, value) for value in
                                                     {value for _, value in held} & distinct):
                keys.add(key)
        if keys:
            named[name] = keys
    return named


def keys_named(state: Mapping[str, Any], task: str) -> dict[str, set[str]]:
    """{collection: keys of its records the task states literally (as ids)}."""
    text = task.lower()
    named = {name: {key for key in collection if _mentions_key(text, name, key)}
             for name, collection in _collections(state).items()}
    return {name: keys for name, keys in named.items() if keys}


def contradicting_names(state: Mapping[str, Any], task: str) -> list[tuple[str, str, str, str]]:
    """(collection, value, key, owner) where the task names a record two ways side by side that are two records:
    a value only `owner` has, next to another record's id ("Ben Okoro (U01)" when Ben Okoro is U08; "U01, Ben
    Okoro"). Only ids with a digit, and only the two separated by nothing but spaces and punctuation."""
    text = task.lower()
    found: list[tuple[str, str, str, str]] = []
    for name, collection in _collections(state).items():
        ids = [(span, key) for key in collection if any(ch.isdigit() for ch in key)
               for span in _positions(text, key)]
        if not ids:
            continue
        distinct = _distinct(collection)
        for owner, record in collection.items():
            for value in {v for _, v in _strings(record)} & distinct:
                if value.lower() == owner.lower():
                    continue
                for start, end in _positions(text, value):
                    for (k_start, k_end), key in ids:
                        gap = text[end:k_start] if k_start >= end else text[k_end:start]
                        if key != owner and len(gap) <= 3 and not any(ch.isalnum() for ch in gap):
                            found.append((name, value, key, owner))
    return sorted(set(found))


def keyed_collections(state: Mapping[str, Any]) -> set[str]:
    """Names of the state's collections of records keyed by id."""
    return set(_collections(state))
