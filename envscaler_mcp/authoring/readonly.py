"""Read-only scenarios: questions a user asks that change nothing, checked on what the agent did and said.

A spec is a dict (environments/<env>/make_scenarios.py keeps a list of them, `READ_ONLY`):

    {"title": "...", "task": "...",
     "solution": [("get_order", {"order_id": "O-10046"}), ...],      # the queries a correct agent makes
     "answer": "Your order O-10046 shipped on 2026-03-14 ...",        # what it then tells the user
     "checks": [("Has the agent given the tracking number?", "says(transcript, 'FE2026031410046')"), ...]}

Each check becomes a transcript item whose validator returns the expression (`says`, `called`, `not_called`
and `not_says` come from the sandbox's `transcript_checks` module); a last state item asserts that nothing
changed. The QA gate proves them like any scenario, with its answer probes standing in for wrong solutions
(every fact of the reference answer, changed, must be caught by some item).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.authoring.specs import as_call
from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from envscaler_mcp.skeleton.models import Provenance

HELPERS = ("called", "not_called", "not_says", "says")
UNCHANGED = ("Has everything been left as it was (the task only asks for information)?",
             "def check_func(final_state):\n    return final_state == initial_state\n")


def transcript_validator(expression: str) -> str:
    """The source of a transcript validator returning `expression` (helpers imported as it uses them)."""
    used = [name for name in HELPERS if re.search(rf"\b{name}\(", expression)]
    head = f"from transcript_checks import {', '.join(used)}\n\n\n" if used else ""
    return f"{head}def check_func(transcript):\n    return {expression}\n"


def read_only_scenario(env_id: str, spec: Mapping[str, Any], initial_state: State) -> Scenario:
    """A scenario from a read-only spec (see the module docstring)."""
    items = [ChecklistItem(id=f"c{n}", description=text, validator=transcript_validator(expr), kind="transcript")
             for n, (text, expr) in enumerate(spec["checks"], start=1)]
    items.append(ChecklistItem(id=f"c{len(items) + 1}", description=UNCHANGED[0], validator=UNCHANGED[1],
                               claims_change=False))
    calls = [as_call(c) for c in spec["solution"]]
    return Scenario(
        env_id=env_id, title=spec["title"], task=spec["task"], initial_state=copy.deepcopy(initial_state),
        checklist=items, reference_solution=calls, reference_answer=spec["answer"], difficulty=len(calls),
        provenance=Provenance(source="hand-authored"),
    ).with_id()


def read_only(env_id: str, specs: Sequence[Mapping[str, Any]], initial_state: State) -> list[Scenario]:
    """Scenarios from read-only specs, all starting at `initial_state` (the default state, so they also run
    against a server started without a scenario)."""
    return [read_only_scenario(env_id, spec, initial_state) for spec in specs]

