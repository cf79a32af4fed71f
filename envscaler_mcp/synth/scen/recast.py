"""A task about a record the rules do not let change is recast, by code, onto a record that takes the change.

`retarget.misnamed` finds a task naming a record by id whose change the rules refuse, while the very same call is
accepted on some of its peers (each tried on the real server). Asking the 1.5B model for a new task about a peer
rarely worked: told that agent AG03 does not work queue Q-HW while AG02 does, it answered `"task": "AG03: {"`
three times, and the item was dropped after its checklist, validators and plan had passed. The mechanical fix is
to write the same task about the peer: its id swapped for the refused record's in the task, the title, the
checklist, the validators and the plan, and where the task names the record by another value of its own (a name,
an email), that value swapped for the peer's value of the same field. The recast draft then goes through the
whole gate like any other; a note in its provenance says what was swapped and why.

A peer is not chosen when it differs from the refused record in a reference to another record that the task
names (the refused order is Marta's, the task says "this is Marta", the peer is Jonas's order): the task would then
ask one person to change another person's record. Nor when the recast texts would still name a value of the
refused record that the peer does not share, in a form the swap of whole values does not see (`said.py`: "this
is Marta" for "Marta Lindqvist", "April 7" or "9:15" for "2026-04-07T09:15:00", "112.00" for 112.0): the task
would then be about the peer and the refused record at once. No recast either when the refused id is a number
("order 3, all 3 of its items"), nor onto a peer the draft already names (in its texts, a validator or its
plan: "is order O-2001 left as it was?"), nor when a value to swap is said twice in one text (O-2003's status
"shipped" also said of another parcel). No peer left: the task is asked again, as before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from envscaler_mcp._json import State
from envscaler_mcp.qa.record_index import every_text
from envscaler_mcp.synth.scen.anchors import Anchor, records
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.retarget import Misnamed, names_id, swapped_all
from envscaler_mcp.synth.scen.said import MIN_VALUE, mentions, still_named, word


def _mentions(text: str, anchor: Anchor) -> bool:
    """Whether `text` names the record: by its id, or by a text value of its own in some form (`said.forms`: a
    whole value, a part of a name, a date written out)."""
    return names_id(text, anchor.record_id) or mentions(text, anchor.record)


def _text_swaps(old: Anchor, peer: Anchor, text: str, ids: set[str]) -> dict[str, str]:
    """The record's own values named in `text` (its id, and string fields of `said.MIN_VALUE`+ characters that are not
    record ids) -> the peer's value of the same field."""
    swaps = {old.record_id: peer.record_id}
    for key, value in old.record.items():
        new = peer.record.get(key)
        if (isinstance(value, str) and isinstance(new, str) and value != new and len(value) >= MIN_VALUE
                and value not in ids and word(value).search(text)):
            swaps[value] = new
    return swaps


def _fits(old: Anchor, peer: Anchor, texts: Sequence[str], swaps: Mapping[str, str], by_id: Mapping[str, Anchor]
          ) -> bool:
    """Whether the task may be about `peer` instead of `old`: no value swapped in is one the texts already have
    ("this is Marta … cancel my order" made about Jonas's order, in a task that also names Jonas), no value swapped
    out is said twice in one text (a status word also said of another parcel), and no field in which the two
    differ refers to another record that the texts name (the refused order's customer record)."""
    text = " ".join(texts)
    values = [value for value in swaps if value != old.record_id]
    if any(word(swaps[value]).search(text) for value in values) or any(
            len(word(value).findall(one)) > 1 for value in values for one in texts):
        return False
    for key, value in old.record.items():
        if peer.record.get(key) == value or not isinstance(value, str):
            continue
        other = by_id.get(value)
        if other is not None and other.record_id not in (old.record_id, peer.record_id) and _mentions(text, other):
            return False
    return True


def _swap_text(text: str, swaps: Mapping[str, str]) -> str:
    """`text` with each key of `swaps`, as a word of its own, replaced by its value (all at once, longest first)."""
    keys = sorted(swaps, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w-])")
    return pattern.sub(lambda m: swaps[m.group(1)], text)


def recast(draft: Draft, wrong: Misnamed, state: State) -> Draft | None:
    """The draft about a peer that takes the refused change, a provenance note saying so; None when no peer fits,
    or the task does not name the refused record by id, or that id is a number."""
    old = wrong.record
    if not wrong.takers or not names_id(draft.task, old.record_id) or old.record_id.isdigit():
        return None  # an id that is a number: a count or an amount beside it would be swapped too
    by_id = {a.record_id: a for a in records(state)}
    texts = [draft.title, draft.task, *(c.description for c in draft.checklist)]
    words = " ".join(texts)
    code = "\n".join(c.validator or "" for c in draft.checklist)
    planned = set(every_text([c.arguments for c in draft.solution]))
    # a peer the draft already names (a checklist item asking that it be left alone) would be asked to change
    # and to stay as it was at once
    unnamed = [t for t in wrong.takers
             if not (names_id(words, t.record_id) or names_id(code, t.record_id) or t.record_id in planned)]
    fitting = ((t, _text_swaps(old, t, words, set(by_id))) for t in unnamed)
    peer, swaps = next(((t, sw) for t, sw in fitting if _fits(old, t, texts, sw, by_id)
                        and still_named(old.record, t.record, _swap_text(words, sw)) is None), (None, {}))
    if peer is None:
        return None
    ids = {old.record_id: peer.record_id}
    checklist = [c.model_copy(update={"description": _swap_text(c.description, swaps),
                                      "validator": None if c.validator is None else _swap_text(c.validator, ids)})
                 for c in draft.checklist]
    solution = [c.model_copy(update={"arguments": swapped_all(c.arguments, ids)}) for c in draft.solution]
    shown = ", ".join(f"{k!r} -> {v!r}" for k, v in swaps.items())
    note = (f"task recast from {old.collection} {old.record_id} to {peer.record_id} by code ({shown}): "
            f"{wrong.reason()[:300]}")
    return draft.model_copy(update={
        "title": _swap_text(draft.title, swaps), "task": _swap_text(draft.task, swaps), "checklist": checklist,
        "solution": solution, "notes": [*draft.notes, note]})
