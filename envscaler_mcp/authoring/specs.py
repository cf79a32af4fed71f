"""Building blocks of hand-authored scenario specs: validators, checklist items, calls, scenarios.

A bundled environment's `make_scenarios.py` holds only its scenarios, written with these helpers in one of
two styles:

* calls: `scenario(env_id, title, task, state, [item(1, "Has ...?", 'return ...'), ...], [call(...), ...])`,
  where an item's validator is the body of `check_func`;
* specs: dicts `{"title", "task", "checklist": [(description, expression[, claims_change])],
  "solution": [(tool, arguments)], "initial_state"?}` passed to `from_specs`, where a validator is one
  boolean expression that may use named helper lists (e.g. the records the solution added).

Wrong solutions are kept beside the specs, keyed by scenario title, and attached by `with_wrong_solutions`.
Read-only questions are built by readonly.py.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.errors import UsageError
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

CallSpec = ToolCall | tuple[str, dict[str, Any]]
"""A call as a ToolCall or as a (tool, arguments) pair."""


def call(tool: str, **arguments: Any) -> ToolCall:
    """One tool call of a reference or wrong solution."""
    return ToolCall(tool=tool, arguments=arguments)


def as_call(spec: CallSpec) -> ToolCall:
    """A ToolCall from either call form."""
    return spec if isinstance(spec, ToolCall) else ToolCall(tool=spec[0], arguments=spec[1])


def body_validator(body: str) -> str:
    """Validator source whose `check_func(final_state) -> bool` has `body` (unindented lines) as its body."""
    lines = ["def check_func(final_state) -> bool:"] + ["    " + ln for ln in body.strip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def expression_validator(expression: str, helpers: Mapping[str, str] | None = None) -> str:
    """Validator source returning `bool(expression)`; each helper named in the expression is assigned first.

    `helpers` maps a name to an expression over `final_state` / `initial_state`, e.g.
    `{"new_orders": '[o for k, o in final_state["orders"].items() if k not in initial_state["orders"]]'}`.
    """
    lines = ["def check_func(final_state):"]
    lines += [f"    {name} = {expr}" for name, expr in (helpers or {}).items() if name in expression]
    lines.append(f"    return bool({expression})")
    return "\n".join(lines) + "\n"


def unchanged(path: str) -> str:
    """Expression: the value reached by `path` (e.g. '["orders"]["O-10050"]') is as it was initially."""
    return f"final_state{path} == initial_state{path}"


def item(n: int, description: str, body: str, claims_change: bool = True) -> ChecklistItem:
    """Checklist item `c<n>` whose validator has `body` as the body of `check_func` (see `body_validator`)."""
    return ChecklistItem(id=f"c{n}", description=description, validator=body_validator(body),
                         claims_change=claims_change)


def scenario(env_id: str, title: str, task: str, state: State, checks: list[ChecklistItem],
             solution: Sequence[CallSpec]) -> Scenario:
    """A hand-authored scenario with its content-hash id; difficulty is the reference solution's length."""
    calls = [as_call(c) for c in solution]
    return Scenario(env_id=env_id, title=title, task=task, initial_state=state, checklist=checks,
                    reference_solution=calls, difficulty=len(calls),
                    provenance=Provenance(source="hand-authored")).with_id()


def from_specs(env_id: str, specs: Sequence[Mapping[str, Any]], state: State,
               helpers: Mapping[str, str] | None = None) -> list[Scenario]:
    """Scenarios from spec dicts (see the module docstring); a spec without `initial_state` starts at `state`."""
    out = []
    for spec in specs:
        items = [
            ChecklistItem(id=f"c{n}", description=entry[0], validator=expression_validator(entry[1], helpers),
                          claims_change=entry[2] if len(entry) > 2 else True)
            for n, entry in enumerate(spec["checklist"], 1)
        ]
        out.append(scenario(env_id, spec["title"], spec["task"], copy.deepcopy(spec.get("initial_state", state)),
                            items, spec["solution"]))
    return out


def with_wrong_solutions(scenarios: list[Scenario], wrong: Mapping[str, Sequence[CallSpec]], *,
                         require: bool = True) -> list[Scenario]:
    """Attach one plausible wrong solution per scenario, looked up by title.

    Raises UsageError when titles repeat, when `wrong` names a title no scenario has (a typo would silently
    drop a check), or, with `require`, when a scenario has no wrong solution.
    """
    titles = [sc.title for sc in scenarios]
    repeated = sorted({t for t in titles if titles.count(t) > 1})
    if repeated:
        raise UsageError(f"scenario titles must be unique to attach wrong solutions; repeated: {repeated}")
    unknown = sorted(set(wrong) - set(titles))
    if unknown:
        raise UsageError(f"wrong solutions for titles no scenario has: {unknown}")
    # A read-only question's wrong answers are the gate's answer probes, so it needs no wrong solution.
    missing = [sc.title for sc in scenarios if sc.title not in wrong and not _is_question(sc)]
    if require and missing:
        raise UsageError(f"no plausible wrong solution to test the checklist against: {missing}")
    return [sc.model_copy(update={"wrong_solutions": [*sc.wrong_solutions, [as_call(c) for c in wrong[sc.title]]]})
            if sc.title in wrong else sc for sc in scenarios]


def _is_question(scenario: Scenario) -> bool:
    return scenario.reference_answer is not None and any(c.kind == "transcript" for c in scenario.checklist)
