"""The scenario QA gate: a scenario is kept only when its validators are proven to work.

For one scenario, `check_scenario` verifies, in order:

1. validators    - every validator runs in the sandbox and returns a bool (on the initial and the final state);
2. initial-false - at least one validator is False on the untouched initial state, and every item with
                   `claims_change=True` is False there;
3. replay        - the reference solution, replayed through a real server episode started at the initial
                   state, has every call succeed (not `is_error`, structured `success` true);
4. final-true    - every validator is True on the state the replay leaves;
5. mutation      - optional: each changed field of that final state, perturbed alone, flips some validator.

The report says which step failed and why, item by item, so the scenario generator can repair and retry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from envscaler_mcp.qa.mutation import MutationReport, mutation_check
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scoring.models import CheckResult
from envscaler_mcp.scoring.sandbox import ValidatorSandbox

StepName = Literal["validators", "initial_false", "replay", "final_true", "mutation"]
StepStatus = Literal["pass", "fail", "warn", "skip"]


class Episode(Protocol):
    """What the gate needs from an episode (envscaler_mcp.launch's episodes fit)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...
    async def get_state(self) -> dict[str, Any]: ...


EpisodeFactory = Callable[[dict[str, Any]], AbstractAsyncContextManager[Episode]]
"""Opens an isolated episode at a given initial state, e.g. `server.episode` of a launched server."""


class GateStep(BaseModel):
    """Outcome of one gate step."""

    name: StepName = Field(description="Which step.")
    status: StepStatus = Field(description="pass / fail / warn (reported, not fatal) / skip (not run).")
    reasons: list[str] = Field(default_factory=list, description="Why it failed, warned or was skipped.")


class ReplayCall(BaseModel):
    """One replayed call of the reference solution."""

    tool: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments sent.")
    ok: bool = Field(description="The call succeeded (no is_error, structured success true).")
    detail: str | None = Field(None, description="Error text when the call failed.")


class GateReport(BaseModel):
    """Everything the gate found out about one scenario."""

    env_id: str = Field(description="Environment id.")
    scenario_id: str = Field(description="Scenario id.")
    title: str = Field("", description="Scenario title.")
    n_checks: int = Field(description="Checklist items.")
    steps: list[GateStep] = Field(description="One entry per gate step, in order.")
    initial_results: list[CheckResult] = Field(default_factory=list, description="Validators on the initial state.")
    final_results: list[CheckResult] = Field(default_factory=list, description="Validators after the replay.")
    replay: list[ReplayCall] = Field(default_factory=list, description="The replayed calls, up to the first failure.")
    mutation: MutationReport | None = Field(None, description="Mutation test, when asked for and reached.")
    final_state: dict[str, Any] | None = Field(None, exclude=True, description="State after the replay (not saved).")

    @property
    def passed(self) -> bool:
        """True when no step failed."""
        return all(s.status != "fail" for s in self.steps)

    def step(self, name: StepName) -> GateStep:
        """The step with this name."""
        return next(s for s in self.steps if s.name == name)

    def reasons(self) -> list[str]:
        """Every failure and warning as 'step: reason'."""
        return [f"{s.name}: {r}" for s in self.steps if s.status in ("fail", "warn") for r in s.reasons]


def _call_outcome(result: Any) -> tuple[bool, str | None]:
    """Did a CallToolResult-like object report success? Returns (ok, error detail)."""
    text = " ".join(getattr(c, "text", "") for c in (getattr(result, "content", None) or [])).strip()
    if getattr(result, "is_error", False):
        return False, f"is_error: {text[:300] or '(no message)'}"
    structured = getattr(result, "structured_content", None)
    if structured is None and text:
        try:
            structured = json.loads(text)
        except ValueError:
            structured = None
    if not isinstance(structured, dict):
        return False, f"result has no structured 'success' field: {text[:300]!r}"
    if structured.get("success") is not True:
        return False, f"success is {structured.get('success')!r}: {str(structured.get('error', ''))[:300]}"
    return True, None


async def replay_reference(scenario: Scenario, episode_factory: EpisodeFactory
                           ) -> tuple[list[ReplayCall], dict[str, Any] | None, list[str]]:
    """Replay the reference solution in a fresh episode; return (calls, final state, failure reasons)."""
    calls: list[ReplayCall] = []
    try:
        async with episode_factory(scenario.initial_state) as episode:
            for n, call in enumerate(scenario.reference_solution, start=1):
                try:
                    ok, detail = _call_outcome(await episode.call_tool(call.tool, call.arguments))
                except Exception as exc:  # a client-side error: report it, the other scenarios go on
                    ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                calls.append(ReplayCall(tool=call.tool, arguments=call.arguments, ok=ok, detail=detail))
                if not ok:
                    return calls, None, [f"call {n} {call.tool}({json.dumps(call.arguments)[:200]}) failed: {detail}"]
            return calls, await episode.get_state(), []
    except Exception as exc:
        return calls, None, [f"the episode failed: {type(exc).__name__}: {exc}"]


def _errors(results: list[CheckResult], where: str) -> list[str]:
    return [f"{r.item_id} on the {where} state: {r.reason}" for r in results if r.reason is not None]


async def check_scenario(scenario: Scenario, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox, *,
                         require_reference: bool = True, mutation: bool = False) -> GateReport:
    """Run the QA gate on one scenario (see the module docstring); never raises for a bad scenario."""
    report = GateReport(env_id=scenario.env_id, scenario_id=scenario.id, title=scenario.title,
                        n_checks=len(scenario.checklist), steps=[])
    add = report.steps.append
    items = scenario.checklist
    validator_problems: list[str] = []
    if not items:
        validator_problems.append("the checklist is empty")
    validator_problems += [f"{c.id} has no validator" for c in items if not (c.validator or "").strip()]

    # 2. initial-false
    initial_reasons: list[str] = []
    if items:
        report.initial_results = await sandbox.run(items, scenario.initial_state, scenario.initial_state)
        validator_problems += _errors(report.initial_results, "initial")
        if all(r.passed for r in report.initial_results):
            initial_reasons.append("every validator is already True on the initial state")
        initial_reasons += [f"{c.id} claims a change but is already True on the initial state"
                            for c, r in zip(items, report.initial_results, strict=True)
                            if c.claims_change and r.passed]
    else:
        initial_reasons.append("no validators to run")

    # 3. replay
    replay_status: StepStatus = "pass"
    replay_reasons: list[str] = []
    if not scenario.reference_solution:
        replay_status = "fail" if require_reference else "skip"
        replay_reasons.append("no reference solution, so the task is not proven solvable")
    else:
        report.replay, report.final_state, replay_reasons = await replay_reference(scenario, episode_factory)
        if replay_reasons:
            replay_status = "fail"

    # 4. final-true
    final_status: StepStatus = "skip"
    final_reasons: list[str] = []
    if report.final_state is not None and items:
        report.final_results = await sandbox.run(items, scenario.initial_state, report.final_state)
        validator_problems += _errors(report.final_results, "final")
        final_reasons = [f"{r.item_id} is not True after the reference solution"
                         + (f" ({r.reason})" if r.reason else "") for r in report.final_results if not r.passed]
        final_status = "fail" if final_reasons else "pass"
    else:
        final_reasons.append("the reference solution was not replayed to the end")

    add(GateStep(name="validators", status="fail" if validator_problems else "pass", reasons=validator_problems))
    add(GateStep(name="initial_false", status="fail" if initial_reasons else "pass", reasons=initial_reasons))
    add(GateStep(name="replay", status=replay_status, reasons=replay_reasons))
    add(GateStep(name="final_true", status=final_status, reasons=final_reasons))

    # 5. mutation (optional; only meaningful when the final state passes every validator)
    if mutation:
        if final_status == "pass" and report.final_state is not None:
            report.mutation = await mutation_check(scenario, report.final_state, sandbox)
            status: StepStatus = "warn" if report.mutation.reasons() else "pass"
            add(GateStep(name="mutation", status=status, reasons=report.mutation.reasons()))
        else:
            add(GateStep(name="mutation", status="skip", reasons=["needs a final state that passes every validator"]))
    return report
