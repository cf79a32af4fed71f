"""A checklist built over retries: the usable items of each answer are kept, the refused ones named with why.

A small model's checklist often has one good item beside items about the system's tools ("Has a create_folder
tool available") or items that already hold at the start; refusing the whole answer makes the retry start
over, and the model tends to repeat itself. Here the usable items stay, and the retry asks only for
replacements, told which items were refused and why. An item that already holds on the initial state is
refused here when a cheap reading of its text shows it (it names one record and quotes the value one of that
record's fields already has); the gate still checks every validator on the initial state. An item naming an id
that neither the state nor the task has is refused too: the 1.5B model copied a prompt's example from another
system ("Has order ORD-1001 status 'cancelled'?" on a file store without orders), and every validator then read a
collection the state lacks.
"""

from __future__ import annotations

import re

from envscaler_mcp._json import State
from envscaler_mcp.qa.record_index import every_text
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen.anchors import Anchor, records
from envscaler_mcp.synth.scen.parsers import NO_CHANGE, checklist_items

MAX_ITEMS = 6
_QUOTED = re.compile(r"""['"‘“]([^'"’”]{1,80})['"’”]""")
# An id as systems write them: capitals, an optional dash, digits ("ORD-1001", "INC-3001", "E1002", "U01").
_ID = re.compile(r"(?<![\w-])[A-Z]{1,5}-?\d{1,8}(?:-\d{1,8})*(?![\w-])")


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.I) is not None


def already_true(item: ChecklistItem, state_records: list[Anchor]) -> str | None:
    """Why a [change] item visibly holds on the initial state, or None: its text names exactly one record (by
    id), quotes exactly one value, and a field of that record whose name the text mentions has that value."""
    if not item.claims_change:
        return None
    text = item.description
    named = [a for a in state_records if mentions(text, a.record_id)]
    quoted = {q.strip().lower() for q in _QUOTED.findall(text)}
    if len({(a.collection, a.record_id) for a in named}) != 1 or len(quoted) != 1:
        return None
    anchor, value = named[0], next(iter(quoted))
    for field, current in anchor.record.items():
        words = field.replace("_", " ")
        if isinstance(current, str) and current.strip().lower() == value and (
                mentions(text, field) or mentions(text, words)):
            return (f"{anchor.collection} {anchor.record_id} already has {field} {current!r} on the initial "
                    "state, so the item holds before the task is done")
    return None


def unknown_ids(item: ChecklistItem, known: str, task: str) -> str | None:
    """Why an item names a record that is nowhere, or None: an id (quoted or not: a value the task sets is in the
    task) that is a word of no key or value of the state (`known`: them all, one a line) and of the task ("Q1" is
    a word of the file name "Q1 2026 report.pdf")."""
    missing = [w for w in dict.fromkeys(_ID.findall(item.description)) if not mentions(known, w) and not mentions(task, w)]
    if not missing:
        return None
    return (f"it names {', '.join(missing)}, which no record of the state has and the task does not mention "
            "(name the records the task is about, by their ids)")


def _example(state_records: list[Anchor]) -> str:
    """A good item shaped like this state's records: a field of a named record reaching a value."""
    for anchor in state_records:
        for field in ("status", "state"):
            if isinstance(anchor.record.get(field), str):
                return f"Has {anchor.collection} {anchor.record_id} {field} '<the value the task sets>'?"
    if state_records:
        anchor = state_records[0]
        field = next((f for f in anchor.record if not f.endswith("id")), "name")
        return f"Has {anchor.collection} {anchor.record_id} {field} '<the value the task sets>'?"
    return "Has <record kind> <its id> <field> '<the value the task sets>'?"


class Collector:
    """The `accept` of a steered checklist step: keeps the usable items of every answer; returns the checklist
    once at least two items are kept (for a repair, seeded with the items it keeps: one more than those) and one
    of them is marked [change], else refuses the answer with the items kept, the ones refused and why, and a
    request for replacements only."""

    def __init__(self, state: State, kept: list[ChecklistItem] | None = None, task: str = "") -> None:
        self.records = records(state)
        self.known = "\n".join(dict.fromkeys(every_text(state)))
        self.task = task
        self.kept: list[ChecklistItem] = list(kept or [])  # a repair keeps a checklist's good items (validators too)
        self.needed = max(2, len(self.kept) + 1) if kept else 2  # a repair adds at least one item

    def __call__(self, text: str) -> list[ChecklistItem]:
        items, left_out = checklist_items(text)
        refused = list(left_out)
        for item in items:
            if any(" ".join(item.description.lower().split()) == " ".join(k.description.lower().split())
                   for k in self.kept):
                continue
            why = already_true(item, self.records) or unknown_ids(item, self.known, self.task)
            if why is not None:
                refused.append(f"{item.description[:80]!r}: {why}")
            elif len(self.kept) < MAX_ITEMS:
                self.kept.append(item)
        if len(self.kept) >= self.needed and any(i.claims_change for i in self.kept):
            return [i.model_copy(update={"id": f"c{n}"}) for n, i in enumerate(self.kept, start=1)]
        raise AnswerFormatError(self.request(refused))

    def request(self, refused: list[str]) -> str:
        """The retry's message: what is kept, what was refused and why, and what to give instead."""
        parts = []
        if self.kept:
            parts.append("kept already (do not repeat them): " + "; ".join(
                f"[{'change' if i.claims_change else 'keep'}] {i.description}" for i in self.kept))
        if refused:
            parts.append("refused: " + "; ".join(refused[:4]))
        if self.kept and not any(i.claims_change for i in self.kept):
            parts.append(NO_CHANGE)
        need = max(self.needed - len(self.kept), 1)
        parts.append(f"give {need} more item(s) only, each a fact about a record of the final state: a field of a "
                     f"record named by its id reaching the value the task sets, e.g. \"{_example(self.records)}\" "
                     "(never a tool, a function or a call, never what is already so before the task)")
        return "; ".join(parts)
