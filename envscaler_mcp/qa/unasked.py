"""Records a reference solution acts on that the task never asked about: an extra destructive call.

A reference that does what the task asks and one thing more (cancels another order, shares another file) passes
validators that look only at what was asked, and then the state check calls an agent that does exactly what the
task says wrong. Judged by the calls, not by the diff alone, and without a model: every argument of a reference
call that is the key of a record (the order it cancels, the agent it assigns) names a record the call acts on,
when the replay changed that record or wrote its key somewhere (a new loan's copy, a ticket's new assignee). Each
such record must be accounted for:

* the task names it (its key, or a value or a word only that record has: qa/grounding.py), or
* a checklist item is about it (its key in the item's description or validator), or
* the task implies it: the record holds the key of a record the task names, or a named record holds its key (a
  copy of the book the task names, the member's loan), unless the task names a record of that collection that the
  same tool acts on ("cancel O-1" names every order `cancel_order` is meant for).

Side effects on records no argument names (an order's stock restored when it is cancelled, the seats a booking
takes, the fines a payment settles) are never judged here: they are what the task's own calls do.
"""

from __future__ import annotations

from collections.abc import Mapping

from envscaler_mcp._json import State
from envscaler_mcp.compare.diff import StateChange, diff_states
from envscaler_mcp.compare.matching import strings_in
from envscaler_mcp.qa.grounding import keyed_collections, named_records
from envscaler_mcp.qa.record_index import StateIndex, index_of, mentions
from envscaler_mcp.scenario.models import Scenario

# (call number from 1, tool, collection, key, what the replay did with the record)
_Target = tuple[int, str, str, str, str]


def _acted_on(scenario: Scenario, final: State, index: StateIndex, changes: list[StateChange] | None = None
              ) -> list[_Target]:
    """Every (call, record) where a call's argument is a record's key and the replay changed that record or wrote
    its key into the state. `changes`: the diff of the initial state to `final`, when the caller has it."""
    initial = scenario.initial_state
    collections = keyed_collections(index)
    owners: dict[str, list[str]] = {}
    for name in sorted(collections):
        for key in initial[name]:  # type: ignore[union-attr]  # keyed: a dict
            owners.setdefault(str(key), []).append(name)
    named_by_calls = [(n, call.tool, key) for n, call in enumerate(scenario.reference_solution, start=1)
                      for key in sorted(strings_in(call.arguments)) if key in owners]
    if not named_by_calls:
        return []
    changed: set[tuple[str, str]] = set()
    written: dict[str, str] = {}  # key -> the first path a value holding it was written to
    held: dict[str, str] = {}  # key -> the first changed record that held it
    for change in changes if changes is not None else diff_states(initial, final):
        if len(change.path) > 1 and str(change.path[0]) in collections:
            record = (str(change.path[0]), str(change.path[1]))
            if record not in changed:
                changed.add(record)
                for value in strings_in(initial[record[0]].get(record[1])):  # type: ignore[union-attr]
                    held.setdefault(value, f"{record[0]} {record[1]}")
        for value in strings_in(change.new):
            written.setdefault(value, change.path_str())
    targets = []
    for n, tool, key in named_by_calls:
        for name in owners[key]:
            if (name, key) in changed:
                targets.append((n, tool, name, key, f"changes {name} {key}"))
            elif key in written:
                targets.append((n, tool, name, key, f"writes {name} {key} into {written[key]}"))
            elif key in held:
                targets.append((n, tool, name, key, f"changes {held[key]}, which holds {name} {key}"))
    return targets


def _implied(initial: State, final: State, named: set[tuple[str, str]], name: str, key: str) -> bool:
    """The record holds the key of a named record and no other key of the collections the task names records of
    (before or after: the monitor given to the employee the task names; not another member's hold on the book the
    task names), or a named record held its key before (a ticket given to an agent is not implied by the ticket)."""
    def strings(states: tuple[State, ...], collection: str, k: str) -> set[str]:
        found: set[str] = set()
        for state in states:
            records = state.get(collection)
            strings_in(records.get(k) if isinstance(records, Mapping) else None, found)
        return found

    named_keys = {k for _, k in named}
    holds = strings((initial, final), name, key) - {key}
    others = {k for c in {c for c, _ in named} for k in initial[c] if (c, k) not in named}  # type: ignore[union-attr]
    return (bool(holds & named_keys) and not holds & others) or any(key in strings((initial,), c, k) for c, k in named)


def unasked_changes(scenario: Scenario, final: State, text: str | None = None, index: StateIndex | None = None,
                    changes: list[StateChange] | None = None) -> list[str]:
    """Reference calls acting on a record the task neither names nor implies and no checklist item is about
    (see the module docstring); `text` is the task with every turn's message (the task alone by default);
    `index`: the initial state's StateIndex, `changes`: the diff of the initial state to `final` (the
    reference's, worked out once), when the caller has them."""
    index = index if index is not None else index_of(scenario.initial_state)
    checklist = " ".join(f"{c.description} {c.validator or ''}" for c in scenario.checklist).lower()
    targets = [t for t in _acted_on(scenario, final, index, changes) if not mentions(checklist, t[3])]
    if not targets:
        return []
    named = named_records(index, text if text is not None else scenario.task)
    aimed = {(call.tool, name) for call in scenario.reference_solution for name, key in named
              if key in strings_in(call.arguments)}
    problems: list[str] = []
    for n, tool, name, key, effect in targets:
        if (name, key) in named:
            continue
        if (tool, name) not in aimed and _implied(scenario.initial_state, final, named, name, key):
            continue
        problems.append(f"call {n} {tool} {effect}, a record the task neither names nor implies and no checklist "
                        "item is about (a call the task did not ask for)")
    return problems
