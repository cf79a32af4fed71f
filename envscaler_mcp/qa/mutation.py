"""Mutation test of a scenario's scoring: does every deviation from the reference's final state fail?

Starting from the reference solution's final state (every validator True), one field at a time is perturbed
and the scoring runs again. Probes of the fields the solution changed:

* a changed value is reverted to its initial value, and also set to a third value;
* a removed value is restored;
* an added value is removed, and every field inside it is set to another value one at a time.

Collateral probes, of what the solution did NOT change (an agent that also cancels a second order):

* in each dict of records the solution touched, another record gets the same field changes, and is removed;
* each top-level attribute the solution left alone has its first field changed.

A probe is *caught* when a validator turns False (or errors) or the state check (`references.reference`) finds an
unexpected change. A probe neither catches is *skipped* when its field is free (free text, a generated
timestamp: any value is right), else it is *uncaught*: the scoring would pass a wrong final state.

Transcript items see the reference transcript throughout (they cannot notice a state probe); the answer
probes that test them are a gate step of their own (qa/transcript.py).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSON, JSONObject, State
from envscaler_mcp.compare.diff import PathPart, diff_states, format_path
from envscaler_mcp.references.reference import Reference
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario

_MAX_PROBES = 250
_TOGETHER = 64  # probed states judged in one sandbox request (ValidatorSandbox.run_probes)
_TOGETHER_BYTES = 4 << 20  # and their JSON text at most (each is held parsed meanwhile)
_COLLATERAL_FIELDS = 3  # field changes copied to another record, per dict of records


class Probe(BaseModel):
    """One perturbation of the final state and what noticed it."""

    path: str = Field(description="Field that was perturbed, e.g. 'orders.O1.status'.")
    mutation: str = Field(description="What was done to it.")
    collateral: bool = Field(False, description="The probe changes something the reference solution left alone.")
    caught_by: list[str] = Field(default_factory=list, description="Items whose validator turned False or errored.")
    unexpected: list[str] = Field(
        default_factory=list, description="What the state check found (first few unexpected changes)."
    )
    skipped: str | None = Field(None, description="Why an uncaught probe does not count: its field is free.")

    @property
    def caught(self) -> bool:
        """A validator or the state check noticed the perturbation."""
        return bool(self.caught_by or self.unexpected)


class MutationReport(BaseModel):
    """Result of the mutation test of one scenario."""

    baseline_failures: list[str] = Field(
        default_factory=list, description="Items not True on the unperturbed final state (the test needs none)."
    )
    probes: list[Probe] = Field(default_factory=list, description="Every perturbation tried.")
    truncated: bool = Field(False, description="True when there were more fields than the probe budget.")

    state_check: str | None = Field(
        "", description="Why the state check could not help ('' when it ran; None: validators only were asked)."
    )

    @property
    def uncaught(self) -> list[Probe]:
        """Probes nothing caught, of fields that are not free."""
        return [p for p in self.probes if not p.caught and p.skipped is None]

    @property
    def unguarded(self) -> list[str]:
        """Fields with at least one probe no validator caught, in order, without repeats."""
        return list(dict.fromkeys(p.path for p in self.probes if not p.caught_by))

    def reasons(self) -> list[str]:
        """Human-readable problems (empty when every probe was caught)."""
        out = [f"{item} is not True on the final state, so fields cannot be probed" for item in self.baseline_failures]
        neither = "no validator and no state check" if self.state_check == "" else "no validator"
        out += [f"{neither} notices when {p.path} is {p.mutation}" for p in self.uncaught]
        if self.uncaught and self.state_check:
            out.append(f"the state check could not help: {self.state_check}")
        if self.truncated:
            out.append(f"only the first {_MAX_PROBES} probes were run")
        return out

    def notes(self) -> list[str]:
        """Probes skipped because their field is free (reported, not failures)."""
        return [f"{p.path} is free ({p.skipped}): {p.mutation} is not checked" for p in self.probes if p.skipped]


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


def _edit(text: str, path: list[PathPart], how: str, value: Any = None) -> Any:
    """A copy of the state whose JSON is `text`, with the value at `path` set, deleted or inserted."""
    copy = json.loads(text)
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
    """Every probe of what the solution changed, in diff order; the states are built one at a time when run."""
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


def is_records(value: JSON) -> TypeGuard[dict[str, JSONObject]]:
    """A non-empty dict of records (dicts): orders by id, customers by id."""
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _collateral_plan(initial: State, final: State) -> list[Step]:
    """Probes of what the solution left alone: another record changed like the touched ones, or removed;
    the first field of each untouched top-level attribute changed."""
    plan: list[Step] = []
    changes = diff_states(initial, final)
    for name, before in initial.items():
        after = final.get(name)
        touched = [c for c in changes if c.path and c.path[0] == name]
        if not touched:
            leaves = [(p, v) for p, v in _leaves(before, [name]) if p != [name] or not isinstance(v, dict | list)]
            if leaves:
                path, value = leaves[0]
                plan.append((path, f"set to {_short(perturb(value))} (left alone by the reference)", "set",
                             perturb(value)))
            continue
        if not (is_records(before) and isinstance(after, dict)):
            continue
        hit = {c.path[1] for c in touched if len(c.path) > 1}
        others = [k for k in before if k not in hit and k in after and after[k] == before[k]]
        if not others:
            continue
        other = others[0]
        fields = [c for c in touched if len(c.path) > 2 and c.op == "changed"][:_COLLATERAL_FIELDS]
        for change in fields:
            path = [name, other, *change.path[2:]]
            try:
                current = _get(after, path[1:])
            except (KeyError, IndexError, TypeError):
                continue
            value = change.new if change.new != current else perturb(current)
            plan.append((path, f"set to {_short(value)} like {format_path(change.path[:2])} (another record)",
                         "set", value))
        plan.append(([name, other], "removed (another record)", "delete", None))
    return plan


def _get(value: Any, path: list[PathPart]) -> Any:
    for part in path:
        value = value[part]
    return value


async def mutation_check(scenario: Scenario, final_state: State, sandbox: ValidatorSandbox,
                         reference: Reference | None = None, *, validators_only: bool = False,
                         transcript: JSONObject | None = None) -> MutationReport:
    """Perturb the final state field by field (what changed, and collateral); report what nothing notices.

    With `reference`, a probe the validators miss may still be caught by the state check against it.
    `validators_only`: only what the solution changed is probed, and only validators count.
    `transcript` (the reference transcript) is what transcript items read meanwhile.
    """
    items = scenario.checklist
    report = MutationReport()
    if not items:
        return report
    free = reference.free if reference is not None else None
    state_check = reference.check(final_state) if reference is not None and not validators_only else None
    if validators_only:
        report.state_check, reference = None, None
    elif state_check is None:
        report.state_check = "no reference final state to compare with"
    elif state_check.status == "not_available":
        report.state_check = state_check.reason
    elif state_check.status == "fail":  # the gate's final state is the reference's own: never expected
        report.state_check = "the final state already fails the state check"
    use_state = reference is not None and not report.state_check
    plan = [(step, False) for step in _plan(scenario.initial_state, final_state)]
    if not validators_only:
        plan += [(step, True) for step in _collateral_plan(scenario.initial_state, final_state)]
    if len(plan) > _MAX_PROBES:
        plan, report.truncated = plan[:_MAX_PROBES], True
    text = json.dumps(final_state)
    # The probed states a few at a time (each is a copy of the final state), each batch in one sandbox request
    # (one batch process), the first with the final state itself: the baseline, which every probe needs.
    size = max(1, min(_TOGETHER, _TOGETHER_BYTES // max(1, len(text))))
    for start in range(0, max(1, len(plan)), size):
        part = plan[start:start + size]
        probed = [_edit(text, path, how, value) for (path, _, how, value), _ in part]
        judged = await sandbox.run_probes(scenario.initial_state, [
            *([(items, final_state, transcript)] if start == 0 else []), *((items, p, transcript) for p in probed)])
        if start == 0:
            failures = [r.item_id for r in judged.pop(0) if not r.passed]
            if failures:  # nothing else is reported on a final state the checklist refuses
                return MutationReport(baseline_failures=failures)
        for ((path, description, _, _), collateral), state, results in zip(part, probed, judged, strict=True):
            probe = Probe(path=format_path(path), mutation=description, collateral=collateral,
                          caught_by=[r.item_id for r in results if not r.passed])
            if use_state and reference is not None:
                verdict = reference.check(state)
                probe.unexpected = [c.describe() for c in verdict.changes[:3]]
            if not probe.caught and free is not None and free.reason(path) is not None:
                probe.skipped = free.reason(path)
            report.probes.append(probe)
    return report
