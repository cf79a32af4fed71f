"""Summaries say why episodes had no score and which checks could not run (not always the admin plane)."""

from __future__ import annotations

from envscaler_mcp.harness.checks import NO_ADMIN_REASON
from envscaler_mcp.harness.models import CheckOutcome, EpisodeResult
from envscaler_mcp.report.summary import summarize


def episode(n: int, checks: list[CheckOutcome], score: float | None) -> EpisodeResult:
    return EpisodeResult(run_id="r", env_id="e", scenario_id=f"s{n}", trial=0, mode="task", status="completed",
                         checks=checks, score=score, scorable=score is not None,
                         success=None if score is None else score == 1.0)


def outcome(kind: str, status: str, reason: str = "") -> CheckOutcome:
    return CheckOutcome(id="c", description="d", kind=kind, status=status, reason=reason)  # type: ignore[arg-type]


def test_reasons_for_missing_scores_and_checks_that_could_not_run() -> None:
    results = [
        episode(1, [], None),  # an empty checklist
        episode(2, [outcome("state", "not_scorable", NO_ADMIN_REASON)] * 2, None),
        episode(3, [outcome("state", "not_scorable", NO_ADMIN_REASON), outcome("transcript", "pass")], 1.0),
        episode(4, [outcome("state", "pass")], 1.0),
        episode(5, [outcome("state", "pass").model_copy(update={"at_start": True})], None),  # only a guard
    ]
    overall = summarize(results, run_id="r", agent="a", user=None, mode="task", trials=1).overall
    assert overall.not_scorable == 3
    assert overall.not_scorable_why == {NO_ADMIN_REASON: 1, "the scenario's checklist is empty": 1,
                                        "every item already held at the start: nothing to earn": 1}
    assert overall.unscored_checks == {f"state checks: {NO_ADMIN_REASON}": 3}
    assert overall.scored == 2 and overall.mean_score == 1.0
