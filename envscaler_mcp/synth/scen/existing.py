"""A task asking to create a record the initial state already holds is sent back at the task step.

The 1.5B model, shown member M-2002 (Joel Whitaker, joel.whitaker@…), wrote "register member Joel Whitaker"
with that email: every validator already held on the initial state and the reference's `register_member` was
refused ("Email … already belongs to member M-2002"), at the gate half an hour later. Here, at the task step: a
sentence of the task that asks to create something (create, register, add, open, enrol, sign up, set up,
onboard) and names, within its next few words and before any preposition, the kind of record a collection of the state
holds ("member": `members`; "add a note to member …" creates a note), is read against that collection. A record is already held when the sentence contains one of its
own emails, phone numbers or codes (a value with a digit and no space, four characters or more, not a date), its
full name of two words or more after "a"/"new" ("register a new patient named John Doe", whom the state has as
PT-1003: the 1.5B model's `clinic_appointments` task, dropped at the gate after two repair rounds), or
two of its distinctive values (those, and its names and titles): values that are keys of records (the member a
loan is for) are not its own, and its own id counts only when the verb is followed by "a", "an", "new" or
"another" ("create a new order O-2003"; "register the return of copy C-30001" names a copy it does not create).
"open" is read as a verb only so ("open a ticket", not "book the open slot"). The feedback names the record ("the state already has member M-2002 with email
…; ask to create a new one or to change an existing one"). None of the bundled hand-written scenarios' tasks
is refused (`tests/synth/scen/test_existing.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from envscaler_mcp.qa.record_index import keyed, mentions

# the verb, then the rest of its sentence (a dot inside an email or a number does not end it)
_CREATE = re.compile(r"\b(?P<verb>create|register|add|open|enrol|enroll|sign\s+up|set\s+up|onboard)\b"
                     r"(?P<after>(?:[^.;!?\n]|[.!?](?=\S))*)", re.IGNORECASE)
_NEW = re.compile(r"\s+(?:a|an|new|another)\b", re.IGNORECASE)  # "create a …", "open a new …": surely a creation
_NOUN_WORDS = 4  # words after the verb in which the kind of record is looked for
_SKIP = frozenset("a an the new another my our their his her this that".split())
_PREPOSITIONS = frozenset("to for of with on about from in at by into under".split())
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_NAMES = ("name", "title", "full_name", "first_name", "last_name")
_FULL_NAMES = ("name", "full_name")  # a person's or a thing's whole name: "register a new patient named John Doe"


def existing_record(state: Mapping[str, Any], task: str) -> str | None:
    """Why `task` asks to create a record `state` already holds (the feedback line), or None."""
    collections = keyed(state)
    keys = {str(key) for records in collections.values() for key in records}
    for match in _CREATE.finditer(task):
        sentence = match.group("after")
        new = _NEW.match(sentence) is not None
        collection, noun = _kind(sentence, collections)
        if collection is None or (match.group("verb").lower() == "open" and not new):  # "book the open slot …"
            continue
        for key, record in collections[collection].items():
            # its own id counts only after "a"/"new": "register the return of copy C-30001" names the copy
            held = _held(sentence, record, keys - {str(key)} if new else keys, new)
            if held:
                what = " and ".join(f"{field} {value}" for field, value in held[:2])
                return (f"the state already has {noun} {key} with {what}; ask to create a new one (values no "
                        f"record has) or to change an existing one")
    return None


def _kind(sentence: str, collections: Mapping[str, Any]) -> tuple[str | None, str]:
    """The collection whose kind of record is named in the first words after the verb, before any preposition
    ("add a note to member …" creates a note, not a member), and the word."""
    words = []
    for w in re.findall(r"[a-z]+", sentence.lower())[:_NOUN_WORDS * 2]:
        if w in _PREPOSITIONS:
            break
        if w not in _SKIP:
            words.append(w)
    words = words[:_NOUN_WORDS]
    for word in words:
        for name in collections:
            plural = name.lower()
            if word in (plural, plural.removesuffix("s"), plural.removesuffix("es"),
                        plural.removesuffix("ies") + "y"):
                return name, word
    return None, ""


def _held(sentence: str, record: Mapping[str, Any], others: set[str], new: bool) -> list[tuple[str, str]]:
    """The record's own distinctive values in `sentence`, if they show it is the record asked for: one email,
    phone number or code, or, after "a"/"new" (a sure creation), a full name of two words or more; or two
    values (names and titles included); [] otherwise."""
    strong: list[tuple[str, str]] = []
    weak: list[tuple[str, str]] = []
    whole = False  # a full name was named, after "a"/"new"
    for field, value in record.items():
        if not isinstance(value, str) or value in others or len(value) < 4 or _DATE.match(value):
            continue
        code = _EMAIL.match(value) is not None or (" " not in value and any(c.isdigit() for c in value))
        named = new and field.lower() in _FULL_NAMES and len(value.split()) >= 2
        if not code and field.lower() not in _NAMES:
            continue
        if mentions(sentence.lower(), value):
            (strong if code else weak).append((field, value))
            whole = whole or named
    return strong + weak if strong or whole or len(weak) >= 2 else []
