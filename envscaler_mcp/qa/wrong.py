"""Gate step: plausible wrong solutions must fail the checklist.

A checklist that a wrong solution also satisfies cannot tell a right answer from a wrong one. Each wrong
solution is replayed like the reference (a fresh server episode at the initial state) except that failed
calls are allowed: the server rolls them back and the replay goes on, as an agent's episode would. Then the
validators run on the state it leaves (transcript items on its calls followed by the reference answer: an agent
that does the wrong thing and says the right one), in the gate's one validator request for the scenario's
states (qa/gate.py); at least one must be False (a validator that raises counts as False).

The solutions come from the caller: the scenario's own `wrong_solutions` (see `given_wrong_solutions`),
and any a caller derives from the scenario (for example probes built from the reference solution).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.qa.transcript import reference_transcript
from envscaler_mcp.references.replay import EpisodeFactory, ReplayCall, replay_calls
from envscaler_mcp.sandbox.results import CheckResult
from envscaler_mcp.scenario.models import Scenario, ToolCall


class WrongSolution(BaseModel):
    """A list of tool calls that must not satisfy the whole checklist."""

    label: str = Field(description="Where it comes from, shown in reasons (e.g. 'wrong solution 1').")
    calls: list[ToolCall] = Field(description="The calls, replayed in order; failed calls are allowed.")


class WrongSolutionResult(BaseModel):
    """What one wrong solution did to the checklist."""

    label: str = Field(description="The wrong solution's label.")
    calls: list[ReplayCall] = Field(default_factory=list, description="The replayed calls (failed ones included).")
    failing: list[str] = Field(default_factory=list, description="Checklist items not True on its final state.")
    error: str | None = Field(None, description="Why it could not be judged (the episode failed).")

    @property
    def caught(self) -> bool:
        """True when the checklist rejects this wrong solution."""
        return self.error is None and bool(self.failing)

    def reason(self) -> str | None:
        """Why this result fails the step (None when the checklist caught the wrong solution)."""
        if self.error is not None:
            return f"{self.label} could not be replayed: {self.error}"
        if not self.failing:
            return f"{self.label} passes every validator; the checklist is too lenient"
        return None


def given_wrong_solutions(scenario: Scenario) -> list[WrongSolution]:
    """The scenario's own wrong solutions, labelled 'wrong solution N'."""
    return [WrongSolution(label=f"wrong solution {n}", calls=calls)
            for n, calls in enumerate(scenario.wrong_solutions, start=1)]


WrongReplay = tuple[WrongSolutionResult, State | None, JSONObject | None]
"""A wrong solution replayed: its result (not judged yet), the state it left and its transcript (None: it failed)."""


async def replay_wrong_solutions(scenario: Scenario, solutions: Sequence[WrongSolution],
                                 episode_factory: EpisodeFactory, convention: str = DEFAULT_CONVENTION
                                 ) -> list[WrongReplay]:
    """Replay each wrong solution in a fresh episode; what the checklist must then judge (`judge_wrong`). A call's
    success is read under the environment's `convention`."""
    replays: list[WrongReplay] = []
    for wrong in solutions:
        calls, final_state, reasons = await replay_calls(wrong.calls, scenario.initial_state, episode_factory,
                                                         stop_at_failure=False, convention=convention)
        if final_state is None:
            replays.append((WrongSolutionResult(label=wrong.label, calls=calls, error="; ".join(reasons)), None, None))
        else:  # transcript items read its calls, then the right answer
            replays.append((WrongSolutionResult(label=wrong.label, calls=calls), final_state,
                            reference_transcript(scenario, calls, convention)))
    return replays


def judge_wrong(result: WrongSolutionResult, checks: Sequence[CheckResult]) -> WrongSolutionResult:
    """The wrong solution's result with the checklist items not True on its final state."""
    result.failing = [r.item_id for r in checks if not r.passed]
    return result
