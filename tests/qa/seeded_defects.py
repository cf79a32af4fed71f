"""Known-bad scenarios made from good ones, one kind of defect at a time, for measuring what the gate catches
(benchmarks/gate_defects.py, tests/qa/test_seeded_defects.py). Each maker returns the broken scenario, or None
when the defect cannot be seeded into that scenario."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.qa.grounding import keyed_collections, named_records, records_named
from envscaler_mcp.qa.wrong_probes import harmful_extra_call
from envscaler_mcp.references.reference import fixed_keys
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.scenario.models import ChecklistItem, Scenario


def _rebuilt(scenario: Scenario, **update: Any) -> Scenario:
    data = scenario.model_dump(exclude={"id"})
    data.update(update)
    data.pop("wrong_solutions", None)  # the gate would also judge the good scenario's own wrong solutions
    return Scenario.model_validate(data).with_id()


def task_names_another_record(scenario: Scenario) -> Scenario | None:
    """The task names another record of a collection the reference changes by key (its id swapped)."""
    for collection, keys in records_named(scenario.initial_state, scenario.task).items():
        records = scenario.initial_state[collection]
        passed = {str(v) for c in scenario.reference_solution for v in c.arguments.values()}
        for key in sorted(keys & passed):
            if key not in scenario.task or not isinstance(records, dict):
                continue
            other = next((k for k in sorted(records) if k != key and k not in scenario.task and k not in passed), None)
            if other is not None:
                return _rebuilt(scenario, task=re.sub(rf"(?<![\w-]){re.escape(key)}(?![\w-])", other, scenario.task))
    return None


def task_points_at_unseen_state(scenario: Scenario) -> Scenario | None:
    """The task refers to state the agent is never shown."""
    return _rebuilt(scenario, task="Given the state above, " + scenario.task[0].lower() + scenario.task[1:])


def vacuous_item(scenario: Scenario) -> Scenario | None:
    """An item whose description asserts a change from a value to itself (its validator copied from a good one)."""
    state_items = [c for c in scenario.checklist if c.kind == "state" and c.claims_change]
    if not state_items:
        return None
    base = state_items[0]
    item = ChecklistItem(id="c99", description="Has the status changed from 'pending' to 'pending'?",
                         validator=base.validator, claims_change=True)
    return _rebuilt(scenario, checklist=[c.model_dump() for c in [*scenario.checklist, item]])


def always_true_item(scenario: Scenario) -> Scenario | None:
    """An item that claims a change but holds whatever happens."""
    item = ChecklistItem(id="c99", description="Has the request been handled?",
                         validator="def check_func(final_state):\n    return True\n", claims_change=True)
    return _rebuilt(scenario, checklist=[c.model_dump() for c in [*scenario.checklist, item]])


def validator_reads_the_wrong_field(scenario: Scenario) -> Scenario | None:
    """A validator comparing a field of the state reads another field of the same record instead."""
    for n, item in enumerate(scenario.checklist):
        source = item.validator or ""
        if item.kind != "state":
            continue
        for m in re.finditer(r"\[['\"](\w+)['\"]\]\s*==", source):
            field = m.group(1)
            sibling = _sibling_field(scenario, field)
            if sibling:
                broken = source[:m.start()] + f"['{sibling}'] ==" + source[m.end():]
                checklist = [c.model_dump() for c in scenario.checklist]
                checklist[n]["validator"] = broken
                return _rebuilt(scenario, checklist=checklist)
    return None


def _sibling_field(scenario: Scenario, field: str) -> str | None:
    for collection in keyed_collections(scenario.initial_state):
        for record in scenario.initial_state[collection].values():  # type: ignore[union-attr]
            if isinstance(record, dict) and field in record:
                others = [k for k, v in record.items() if k != field and isinstance(v, str)]
                return others[0] if others else None
    return None


async def reference_with_an_accepted_extra_call(scenario: Scenario, factory: EpisodeFactory,
                                                convention: str = DEFAULT_CONVENTION) -> Scenario | None:
    """The reference solution with one more state-changing call that the environment accepts: one of the
    reference's own state-changing calls aimed at another record of the same collection, one the task does not
    name and the reference neither changes nor passes to a call, the first whose replay succeeds and changes the
    state (qa.wrong_probes.harmful_extra_call, on `factory`'s episodes). None when there is none, or when the
    task asks for an answer (the other record might be one the answer needs)."""
    if not scenario.reference_solution or scenario.reference_answer is not None:
        return None
    text = " ".join([scenario.task, *(t.user for t in scenario.turns)])
    avoid = {key for _, key in named_records(scenario.initial_state, text)} | fixed_keys(scenario)
    extra = await harmful_extra_call(scenario, factory, convention, avoid=avoid, repeat=False)
    if extra.call is None:
        return None
    if scenario.turns:  # the extra call ends the last turn
        turns = [t.model_dump() for t in scenario.turns]
        turns[-1]["reference"].append(extra.call.model_dump())
        return _rebuilt(scenario, turns=turns, reference_solution=[])
    return _rebuilt(scenario, reference_solution=[c.model_dump() for c in [*scenario.reference_solution, extra.call]])


KINDS: dict[str, Callable[[Scenario], Scenario | None]] = {
    "task/solution mismatch": task_names_another_record,
    "task naming unseen state": task_points_at_unseen_state,
    "vacuous item": vacuous_item,
    "always-true item": always_true_item,
    "validator reading the wrong field": validator_reads_the_wrong_field,
}
