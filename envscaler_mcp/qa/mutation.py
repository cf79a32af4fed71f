"""Mutation test of a scenario's validators: does every change the solution made matter to some validator?

Starting from a final state on which every validator is True, each difference from the initial state is
perturbed alone and the validators are run again:

* a changed value is reverted to its initial value, and also set to a third value;
* a removed value is restored;
* an added value is removed, and every field inside it is set to another value one at a time.

A probe is *caught* when at least one validator turns False (or errors). A field whose probes are not all
caught is *unguarded*: e.g. a validator that only checks a new reservation exists leaves its fields
unguarded. Incidental changes (a counter, a timestamp) also show up here; the report lists them, and the
caller decides whether that matters.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from envscaler_mcp._json import State
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scoring.diff import PathPart, diff_states, format_path
from envscaler_mcp.scoring.sandbox import ValidatorSandbox

_MAX_PROBES = 200


class Probe(BaseModel):
    """One perturbation of the final state and the validators that noticed it."""

    path: str = Field(description="Field that was perturbed, e.g. 'orders.O1.status'.")
    mutation: str = Field(description="What was done to it.")
    caught_by: list[str] = Field(default_factory=list, description="Items whose validator turned False or errored.")


class MutationReport(BaseModel):
    """Result of the mutation test of one scenario."""

    baseline_failures: list[str] = Field(
        default_factory=list, description="Items not True on the unperturbed final state (the test needs none)."
    )
    probes: list[Probe] = Field(default_factory=list, description="Every perturbation tried.")
    truncated: bool = Field(False, description="True when there were more fields than the probe budget.")

    @property
    def unguarded(self) -> list[str]:
        """Fields with at least one probe no validator caught, in order, without repeats."""
        return list(dict.fromkeys(p.path for p in self.probes if not p.caught_by))

    def reasons(self) -> list[str]:
        """Human-readable problems (empty when every field is guarded)."""
        out = [f"{item} is not True on the final state, so fields cannot be probed" for item in self.baseline_failures]
        out += [f"no validator notices when {p.path} is {p.mutation}" for p in self.probes if not p.caught_by]
        if self.truncated:
            out.append(f"only the first {_MAX_PROBES} probes were run")
        return out


def perturb(value: Any) -> Any:
    """A different value of the same JSON type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 1.5
    if isinstance(value, str):
        return value + "-x" if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {} if value else {"x": True}
    return "x"


def _leaves(value: Any, path: list[PathPart]) -> list[tuple[list[PathPart], Any]]:
    if isinstance(value, dict) and value:
        return [leaf for k, v in value.items() for leaf in _leaves(v, [*path, k])]
    if isinstance(value, list) and value:
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, [*path, i])]
    return [(path, value)]


def _edit(state: Any, path: list[PathPart], how: str, value: Any = None) -> Any:
    """A copy of `state` with the value at `path` set, deleted or inserted."""
    copy = json.loads(json.dumps(state))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "set":
        parent[last] = value
    elif how == "delete":
        del parent[last]
    elif isinstance(parent, list) and isinstance(last, int):  # insert
        parent.insert(last, value)
    else:
        parent[last] = value
    return copy


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


Step = tuple[list[PathPart], str, str, Any]  # path, description, edit ("set" | "delete" | "insert"), value


def _plan(initial: Any, final: Any) -> list[Step]:
    """Every probe, in diff order; the perturbed states are built one at a time when run."""
    plan: list[Step] = []
    for change in diff_states(initial, final):
        path = change.path
        if not path:  # the whole state changed type: nothing finer to probe
            continue
        if change.op == "changed":
            plan.append((path, f"reverted to its initial value {_short(change.old)}", "set", change.old))
            other = perturb(change.new)
            if other != change.old:
                plan.append((path, f"set to {_short(other)}", "set", other))
        elif change.op == "removed":
            plan.append((path, "restored", "insert", change.old))
        else:
            plan.append((path, "removed again", "delete", None))
            if isinstance(change.new, dict | list):
                for leaf_path, leaf in _leaves(change.new, path):
                    if leaf_path != path:
                        plan.append((leaf_path, f"set to {_short(perturb(leaf))}", "set", perturb(leaf)))
    return plan


async def mutation_check(scenario: Scenario, final_state: State, sandbox: ValidatorSandbox) -> MutationReport:
    """Perturb each field that differs from the initial state; report fields no validator guards."""
    items = scenario.checklist
    report = MutationReport()
    baseline = await sandbox.run(items, scenario.initial_state, final_state)
    report.baseline_failures = [r.item_id for r in baseline if not r.passed]
    if report.baseline_failures or not items:
        return report
    plan = _plan(scenario.initial_state, final_state)
    if len(plan) > _MAX_PROBES:
        plan, report.truncated = plan[:_MAX_PROBES], True
    for path, description, how, value in plan:
        results = await sandbox.run(items, scenario.initial_state, _edit(final_state, path, how, value))
        report.probes.append(Probe(path=format_path(path), mutation=description,
                                   caught_by=[r.item_id for r in results if not r.passed]))
    return report
