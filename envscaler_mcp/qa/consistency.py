"""Does the task ask for what the reference solution does? A gate step for every scenario, hand-written,
imported or synthesized.

Validators and the reference solution can agree with each other and still disagree with the task: the
embedded model wrote a task naming the 2023-04-03 18:00 appointment (id 3) whose plan and checklist cancel id
6, so an agent that does what the task says scores 0 and the state check calls the right change collateral.
Checked here, without a model:

* **named records**: in each keyed collection whose records the reference acts on by key (a key of it is an
  argument of one of its calls: the order it cancels, the user it acts as, the agent it assigns), when the
  task names records of that collection (by key, or by a whole value only that record has: qa/grounding.py)
  at least one of them is changed, looked up (its key, or a text found in one of its values, passed to a
  call) or pointed at by a record the reference changes or acts on (a ticket's flight, an order's customer);
  and every record whose id (a key with a digit in it) the task states is accounted for in the same way (a task that says "agent AG01
  (Lucia Fernandez)" while the reference assigns Lucia's id AG05 contradicts itself), where a look-up by a
  text counts only when no other record of the collection holds that text (a category or an owner many tickets
  share does not find INC-3001); a record the task names by key ("the free plan") that the reference never
  uses, while it uses another of that collection the task does not name ("standard"), is a swapped record;
* **two names, two records**: the task names a record by a value only it has and, side by side, by another
  record's id ("Ben Okoro (U01)" when Ben Okoro is U08);
* **unseen state**: the task refers to something the agent never sees ("given the state above",
  "initial_state", "the JSON below");
* **vacuous items**: a checklist description that asserts nothing ("date changed from X to X", no words);
* **calls the task did not ask for**: a reference call acting on a record (one of its arguments is the record's
  key, and the replay changed the record or wrote the key) that the task neither names nor implies and no
  checklist item is about (qa/unasked.py): an extra destructive call.

A task that names no record of a collection ("cancel Alice's unshipped orders") leaves the agent to find them,
and is not judged by the named-records rule. Changes to records no argument of a reference call names are not
judged at all: on the hand-written catalog they are the task's consequences (stock of the products an order
holds, the copy a loan takes, the fines a payment settles). Known limits: a task may name a record for context only ("O-1003 shipped, so cancel
her others") while the solution changes others of that collection; such a scenario is refused (rephrase the
task, or pass the record to a lookup in the reference).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.compare.diff import StateChange
from envscaler_mcp.compare.matching import strings_in
from envscaler_mcp.qa.grounding import contradicting_names, keyed_collections, keys_named, records_named
from envscaler_mcp.qa.record_index import StateIndex, index_of
from envscaler_mcp.qa.unasked import unasked_changes
from envscaler_mcp.references.reference import fixed_keys
from envscaler_mcp.scenario.models import ChecklistItem, Scenario

_UNSEEN = re.compile(
    r"\b(?:given|from|in|per|using|based on|according to)\s+the\s+(?:(?:initial|current|above|below)\s+)?"
    r"(?:state|data|json|context|information|records?|database)\s+(?:above|below|provided|shown|given)\b"
    r"|\binitial[_ ]state\b|\bstate[_ ]dict\b|\bthe\s+(?:above|following)\s+(?:state|json|data)\b",
    re.IGNORECASE)
# "Has place_order tool for …", "Has a function to …": an item about what the system can do, not its state.
_TOOLISH = re.compile(r"^\s*(?:has|have|is|are|does|do)\s+(?:(?:a|an|the)\s+)?(?:[\w-]+\s+)?"
                      r"(?:tools?|functions?|scripts?|methods?|apis?|features?|endpoints?|capabilit(?:y|ies))"
                      r"(?:\s+(?:for|to|that|which|exists?|is\s+available|available)\b|\s*[?.!]?\s*$)",
                      re.IGNORECASE)
_FROM_TO = re.compile(r"\bfrom\s+(['\"]?)(.+?)\1\s+to\s+(['\"]?)(.+?)\3(?:[\s?.!,;]|$)", re.IGNORECASE)


def changed_records(initial: Mapping[str, Any], final: Mapping[str, Any]) -> dict[str, set[str]]:
    """{collection: keys of existing records the final state changed or removed} (additions are new ids the
    task cannot name beforehand)."""
    out: dict[str, set[str]] = {}
    for name in keyed_collections(initial):
        before, after = initial.get(name) or {}, final.get(name)
        after = after if isinstance(after, dict) else {}
        keys = {key for key, record in before.items() if after.get(key) != record}
        if keys:
            out[name] = keys
    return out


def unseen_state(texts: Iterable[str]) -> list[str]:
    """Phrases that point the agent at state it is never shown."""
    found = [m.group(0) for text in texts for m in [_UNSEEN.search(text)] if m]
    return [f"the task refers to something the agent never sees: '{phrase}'" for phrase in found]


def vacuous_items(items: Iterable[ChecklistItem]) -> list[str]:
    """Checklist descriptions that assert nothing about the state: no words, a change from a value to itself, or
    the system's tools instead of its records ("Has place_order tool for creating new orders", "Has a function to
    upload a file": what the system can do is no state a solution reaches)."""
    problems = []
    for item in items:
        text = item.description.strip()
        if not re.search(r"[^\W\d_]{3,}", text):
            problems.append(f"{item.id}'s description states nothing: {text!r}")
            continue
        if _TOOLISH.search(text):
            problems.append(f"{item.id} is about a tool or function of the system, not a state the solution "
                            f"reaches: {text!r}")
            continue
        for m in _FROM_TO.finditer(text):
            if m.group(2).strip().lower() == m.group(4).strip().lower():
                problems.append(f"{item.id} asserts a change from a value to the same value: {text!r}")
    return problems


def _looked_up(records: Mapping[str, Any], key: str, passed: set[str], *, singles_out: bool = False) -> bool:
    """The reference passes the record's key, or a text (4+ characters) found in one of its values (a search).
    With `singles_out`, only a text that no other record of its collection holds: a category or an owner many
    records share does not single out the one whose id the task states."""
    if key in passed:
        return True

    def holds(record: Any, text: str) -> bool:
        return isinstance(record, dict) and any(text in str(v).lower() for v in record.values()
                                                if isinstance(v, (str, int, float)))
    return any(len(p) >= 4 and holds(records.get(key), p.lower())
               and not (singles_out and any(holds(other, p.lower()) for k, other in records.items() if k != key))
               for p in passed)


def _values_of_touched(initial: Mapping[str, Any], final: Mapping[str, Any], changed: dict[str, set[str]],
                       passed: set[str]) -> set[str]:
    """Every string held by a record the reference changes or passes the key of (before or after): the records
    those point at (a ticket's flight, an order's customer) are accounted for when the task names them."""
    found: set[str] = set()
    for name in keyed_collections(initial):
        for state in (initial, final):
            records = state.get(name)
            if isinstance(records, dict):
                for key in changed.get(name, set()) | (set(records) & passed):
                    strings_in(records.get(key), found)
    return found


def mismatched_records(scenario: Scenario, reference_final: State, index: StateIndex | None = None) -> list[str]:
    """Collections where the reference acts on records by key (changes them, or passes their keys) while the task
    names records of that collection the reference neither changes nor looks up (see the module docstring).
    `index`: the initial state's StateIndex, when the caller has one."""
    text = " ".join([scenario.task, *(t.user for t in scenario.turns)])
    index = index if index is not None else index_of(scenario.initial_state)
    named = records_named(index, text)
    by_key = keys_named(index, text)
    passed = fixed_keys(scenario)
    changed = changed_records(scenario.initial_state, reference_final)
    related = _values_of_touched(scenario.initial_state, reference_final, changed, passed)
    holders: dict[str, set[str]] = {}  # key -> the collections that have a record under it
    for name in keyed_collections(index):
        for key in scenario.initial_state[name]:  # type: ignore[union-attr]  # keyed: a dict
            holders.setdefault(str(key), set()).add(name)
    problems = []
    for collection, asked in sorted(named.items()):
        records = scenario.initial_state.get(collection)
        if not isinstance(records, dict):
            continue
        touched = changed.get(collection, set())
        targeted = (set(records) & passed) | (touched & passed)  # keys the reference passes to its calls
        if not targeted:
            continue
        acts = "changes" if touched & passed else "acts on"
        # a value held by a record counts only when no other collection has that key ("3" may be a doctor)
        accounted = touched | passed | {v for v in related if holders.get(v, set()) <= {collection}}
        if not asked & accounted and not any(_looked_up(records, key, passed) for key in asked):
            problems.append(f"the task names {collection} {', '.join(sorted(asked))} but the reference solution "
                            f"{acts} {', '.join(sorted(targeted))} and never looks the named ones up")
            continue
        stray = {key for key in by_key.get(collection, set()) - accounted  # ids, not names used as keys
                 if any(ch.isdigit() for ch in key) and not _looked_up(records, key, passed, singles_out=True)}
        if stray:
            problems.append(f"the task gives the id of {collection} {', '.join(sorted(stray))}, which the reference "
                            f"solution neither changes nor looks up, while it {acts} {', '.join(sorted(targeted))}")
            continue
        unnamed = targeted - asked  # records of the collection the reference uses that the task does not name
        left = {key for key in by_key.get(collection, set()) - accounted  # named by key: 'the free plan'
                if not _looked_up(records, key, passed, singles_out=True)}
        if unnamed and left:
            problems.append(f"the task names {collection} {', '.join(sorted(left))}, which the reference solution "
                            f"never uses, while it {acts} {', '.join(sorted(unnamed))}, which the task does not name")
    for collection, value, key, owner in contradicting_names(index, text):
        problems.append(f"the task calls {collection} {key} {value!r}, which is {owner}'s")
    return problems


def consistency_problems(scenario: Scenario, reference_final: State | None,
                         changes: list[StateChange] | None = None) -> list[str]:
    """Every way the task and its reference solution or checklist disagree ([] = consistent). `changes`: the diff
    of the initial state to `reference_final` (Reference.diff_from_initial), when the caller has it."""
    problems = unseen_state([scenario.task, *(t.user for t in scenario.turns)])
    problems += vacuous_items(scenario.checklist)
    if reference_final is not None:
        index = StateIndex(scenario.initial_state)  # one listing of the records for every question below
        problems += mismatched_records(scenario, reference_final, index)
        problems += unasked_changes(scenario, reference_final, " ".join([scenario.task, *(t.user for t in scenario.turns)]),
                                    index, changes)
    return problems
