"""Authoring read-only scenarios: questions the agent answers by looking things up, changing nothing.

A spec is a dict (environments/<env>/make_scenarios.py keeps a list of them):

    {"title": "...", "task": "...",
     "solution": [("get_order", {"order_id": "O-10046"}), ...],      # the queries a correct agent makes
     "answer": "Your order O-10046 shipped on 2026-03-14 ...",        # what it then tells the user
     "checks": [("Has the agent given the tracking number?", "says(transcript, 'FE2026031410046')"), ...]}

Each check becomes a transcript item whose validator returns the expression (the names `says`, `called`,
`not_called` and `not_says` come from the sandbox's `transcript_checks` module); a last state item asserts
that nothing changed. `gate_problems` proves the scenarios with the QA gate on an in-process server,
including the answer probes: every fact of the reference answer must be checked by some item.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

import anyio

from envscaler_mcp.qa.gate import check_scenario
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

HELPERS = ("called", "not_called", "not_says", "says")
UNCHANGED = ("Has everything been left as it was (the task only asks for information)?",
             "def check_func(final_state):\n    return final_state == initial_state\n")


def transcript_validator(expression: str) -> str:
    """The source of a transcript validator returning `expression` (helpers imported as it uses them)."""
    used = [name for name in HELPERS if re.search(rf"\b{name}\(", expression)]
    head = f"from transcript_checks import {', '.join(used)}\n\n\n" if used else ""
    return f"{head}def check_func(transcript):\n    return {expression}\n"


def read_only_scenario(env_id: str, spec: dict[str, Any], initial_state: dict[str, Any]) -> Scenario:
    """A scenario from a read-only spec (see the module docstring)."""
    items = [ChecklistItem(id=f"c{n}", description=text, validator=transcript_validator(expr), kind="transcript")
             for n, (text, expr) in enumerate(spec["checks"], start=1)]
    items.append(ChecklistItem(id=f"c{len(items) + 1}", description=UNCHANGED[0], validator=UNCHANGED[1],
                               claims_change=False))
    calls = [ToolCall(tool=tool, arguments=args) for tool, args in spec["solution"]]
    return Scenario(
        env_id=env_id, title=spec["title"], task=spec["task"], initial_state=copy.deepcopy(initial_state),
        checklist=items, reference_solution=calls, reference_answer=spec["answer"], difficulty=len(calls),
        provenance=Provenance(source="hand-authored"),
    ).with_id()


def gate_problems(target: Any, scenarios: Sequence[Scenario], *, mutation: bool = True) -> list[str]:
    """Every reason the QA gate (with the mutation step: warnings count) gives against these scenarios, run on
    an in-process server of `target` (an env id or folder). Authoring scripts only: the server runs in this
    process."""
    from envscaler_mcp.launch import launch_server
    from envscaler_mcp.scoring.sandbox import ValidatorSandbox

    async def run() -> list[str]:
        problems: list[str] = []
        async with launch_server(target, transport="memory") as server, ValidatorSandbox() as sandbox:
            for sc in scenarios:
                report = await check_scenario(sc, server.episode, sandbox, mutation=mutation)
                problems += [f"{sc.id} ({sc.title}): {reason}" for reason in report.reasons()]
        return problems

    return anyio.run(run)


def read_only_scenarios(env_id: str, specs: Sequence[dict[str, Any]], initial_state: dict[str, Any]
                        ) -> tuple[list[Scenario], list[str]]:
    """(scenarios built from the specs, every problem the gate finds with them): what an authoring script
    appends to its scenario set, and prints before refusing to write it."""
    scenarios = [read_only_scenario(env_id, spec, initial_state) for spec in specs]
    return scenarios, gate_problems(env_id, scenarios)
