"""Checklist score, success, pass@k and pass^k."""

from __future__ import annotations

from math import comb

import pytest

from envscaler_mcp.scoring.metrics import (
    TrialOutcome,
    aggregate,
    aggregate_by_env,
    checklist_score,
    pass_at_k,
    pass_hat_k,
    success,
)
from envscaler_mcp.scoring.models import CheckResult


def results(*passed: bool) -> list[CheckResult]:
    return [CheckResult(item_id=f"c{i}", passed=p) for i, p in enumerate(passed)]


def test_checklist_score_is_rounded_fraction() -> None:
    assert checklist_score(results(True, False, False)) == 0.3333
    assert checklist_score(results(True, True)) == 1.0
    assert success(results(True, True)) is True
    assert success(results(True, False)) is False


def test_empty_checklist_scores_none() -> None:
    assert checklist_score([]) is None
    assert success([]) is None


def test_pass_at_k_and_pass_hat_k_match_the_combinatorial_definition() -> None:
    n, c = 5, 2
    assert pass_at_k(n, c, 1) == pytest.approx(c / n)
    assert pass_hat_k(n, c, 1) == pytest.approx(c / n)
    assert pass_at_k(n, c, 2) == pytest.approx(1 - comb(3, 2) / comb(5, 2))  # 0.7
    assert pass_hat_k(n, c, 2) == pytest.approx(1 / 10)
    assert pass_at_k(n, c, 4) == 1.0  # any 4 of 5 include a success
    assert pass_hat_k(n, c, 3) == 0.0
    assert pass_at_k(3, 0, 2) == 0.0 and pass_hat_k(3, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)


def test_aggregate_per_env_and_overall() -> None:
    outcomes = [
        TrialOutcome(env_id="a", scenario_id="s1", score=1.0, success=True),
        TrialOutcome(env_id="a", scenario_id="s1", score=0.5, success=False),
        TrialOutcome(env_id="a", scenario_id="s2", score=0.0, success=False),
        TrialOutcome(env_id="a", scenario_id="s2", score=0.0, success=False),
        TrialOutcome(env_id="b", scenario_id="s3", score=1.0, success=True),
        TrialOutcome(env_id="b", scenario_id="s3", score=1.0, success=True),
        TrialOutcome(env_id="b", scenario_id="s3", score=None, success=None),  # not scored: left out
    ]
    per_env, overall = aggregate_by_env(outcomes)
    assert list(per_env) == ["a", "b"]
    assert per_env["a"].mean_score == 0.375 and per_env["a"].success_rate == 0.25
    assert per_env["a"].pass_at_k == {1: 0.25, 2: 0.5}
    assert per_env["a"].pass_hat_k == {1: 0.25, 2: 0.0}
    assert per_env["b"].n_trials == 2 and per_env["b"].pass_hat_k == {1: 1.0, 2: 1.0}
    assert overall.n_scenarios == 3 and overall.n_trials == 6
    assert overall.pass_hat_k[2] == pytest.approx(round(1 / 3, 4))
    assert aggregate([]).mean_score is None
