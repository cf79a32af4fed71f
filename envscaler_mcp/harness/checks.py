"""Turning a final state into checklist verdicts: the validator sandbox behind a small Checker interface."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Protocol

from envscaler_mcp._json import State
from envscaler_mcp.harness.models import CheckOutcome, CheckStatus, EpisodeStatus, SuccessRule
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.scoring.statecheck import StateCheckStatus


class Checker(Protocol):
    """Runs a scenario's validators on a final state."""

    async def check(
        self, items: list[ChecklistItem], initial_state: State, final_state: State
    ) -> list[CheckOutcome]:
        """One CheckOutcome per item, in order."""
        ...


def not_scorable(items: list[ChecklistItem], reason: str) -> list[CheckOutcome]:
    """Every item marked not scorable, with the reason."""
    return [
        CheckOutcome(id=i.id, description=i.description, status="not_scorable", reason=reason) for i in items
    ]


def checklist_score(outcomes: list[CheckOutcome]) -> float | None:
    """passed / scorable items, rounded to 4 decimals; None when no item could be scored."""
    scored = [o for o in outcomes if o.status != "not_scorable"]
    if not scored:
        return None
    return round(sum(o.passed for o in scored) / len(scored), 4)


def episode_success(rule: SuccessRule, score: float | None, status: EpisodeStatus, state_check: StateCheckStatus
                    ) -> bool | None:
    """Success of a scored episode under `rule` (see EpisodeConfig.success); None when it cannot be told."""
    if score is None:
        return None
    completed = status == "completed"
    if rule == "checklist":
        return score == 1.0 and completed
    if rule == "state":
        return None if state_check == "not_available" else state_check == "pass" and completed
    return score == 1.0 and completed and state_check != "fail"


def outcome_from_result(item: ChecklistItem, result: Any) -> CheckOutcome:
    """Convert a scoring CheckResult (passed; a reason when the validator gave no bool) to a CheckOutcome."""
    passed = getattr(result, "passed", None) is True
    reason = str(getattr(result, "reason", None) or "")
    status: CheckStatus = "pass" if passed else ("error" if reason else "fail")
    return CheckOutcome(id=item.id, description=item.description, status=status, reason=reason)


class SandboxChecker(AbstractAsyncContextManager["SandboxChecker"]):
    """A Checker on scoring.sandbox.ValidatorSandbox (worker processes with time and memory limits).

    One instance is shared by every episode of a run; use it as an async context manager.
    """

    def __init__(self, timeout_s: float = 2.0, memory_mb: int = 512, workers: int = 1, isolation: bool = True) -> None:
        from envscaler_mcp.scoring.sandbox import ValidatorSandbox

        self._sandbox = ValidatorSandbox(timeout_s=timeout_s, memory_mb=memory_mb, workers=workers,
                                         isolation=isolation)

    @property
    def isolation(self) -> Any:
        """The sandbox's IsolationReport (which OS layers are in force), once entered."""
        return self._sandbox.isolation

    async def __aenter__(self) -> SandboxChecker:
        await self._sandbox.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._sandbox.__aexit__(exc_type, exc, tb)

    async def check(
        self, items: list[ChecklistItem], initial_state: State, final_state: State
    ) -> list[CheckOutcome]:
        """Run the items with validators in the sandbox; items without a validator are not scorable."""
        runnable = [i for i in items if i.validator]
        results = await self._sandbox.run(runnable, initial_state, final_state) if runnable else []
        by_id = {item.id: outcome_from_result(item, res) for item, res in zip(runnable, results, strict=True)}
        return [by_id.get(i.id) or not_scorable([i], "the item has no validator")[0] for i in items]
