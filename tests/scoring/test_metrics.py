"""The one score and success rule (scoring.metrics), pass@k and pass^k."""

from __future__ import annotations

from math import comb

import pytest

from envscaler_mcp.scoring.metrics import (
    Aggregate,
    ItemVerdict,
    TrialOutcome,
    aggregate,
    aggregate_by_env,
    checklist_score,
    episode_success,
    pass_at_k,
    pass_hat_k,
)

GOAL_PASS, GOAL_FAIL = ItemVerdict(True, False), ItemVerdict(False, False)
GUARD_KEPT, GUARD_BROKEN = ItemVerdict(True, True), ItemVerdict(False, True)
UNSCORABLE_GOAL, UNSCORABLE_GUARD = ItemVerdict(None, False), ItemVerdict(None, True)


def test_the_score_is_the_rounded_fraction_of_goals_passed() -> None:
    assert checklist_score([GOAL_PASS, GOAL_FAIL, GOAL_FAIL]) == 0.3333
    assert checklist_score([GOAL_PASS, GOAL_PASS]) == 1.0
    assert checklist_score([GOAL_FAIL]) == 0.0


def test_guards_earn_nothing_and_a_broken_guard_zeroes_the_score() -> None:
    assert checklist_score([GOAL_PASS, GOAL_FAIL, GUARD_KEPT, GUARD_KEPT]) == 0.5  # not 0.75
    assert checklist_score([GOAL_FAIL, GUARD_KEPT]) == 0.0  # doing nothing keeps the guard and earns nothing
    assert checklist_score([GOAL_PASS, GOAL_PASS, GUARD_BROKEN]) == 0.0
    assert checklist_score([GOAL_PASS, UNSCORABLE_GUARD]) == 1.0  # a guard that could not run breaks nothing


def test_without_a_scorable_goal_there_is_no_score() -> None:
    assert checklist_score([]) is None
    assert checklist_score([GUARD_KEPT]) is None
    assert checklist_score([UNSCORABLE_GOAL, GUARD_KEPT]) is None
    assert checklist_score([UNSCORABLE_GOAL, GOAL_FAIL]) == 0.0  # the unscorable goal is left out


@pytest.mark.parametrize(("rule", "score", "completed", "state", "expected"), [
    ("checklist", 1.0, True, "fail", True),
    ("checklist", 0.9999, True, "pass", False),
    ("checklist", 1.0, False, "pass", False),
    ("state", 0.5, True, "pass", True),
    ("state", 1.0, True, "not_available", None),
    ("state", 1.0, False, "pass", False),
    ("both", 1.0, True, "not_available", True),
    ("both", 1.0, True, "fail", False),
    ("both", 0.5, True, "pass", False),
    ("both", 1.0, False, "pass", False),
    ("both", None, True, "pass", None),
])
def test_episode_success_under_each_rule(rule: str, score: float | None, completed: bool, state: str,
                                         expected: bool | None) -> None:
    assert episode_success(rule, score, completed, state) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("rule", "score", "state", "observation", "expected"), [
    ("checklist+state+observation", 1.0, "pass", "passed", True),
    ("checklist+state+observation", 1.0, "pass", "failed", False),
    ("checklist+state+observation", 1.0, "fail", "passed", False),
    ("checklist+state+observation", 0.5, "pass", "passed", False),
    ("checklist+state+observation", 1.0, "not_available", "not_applicable", True),  # the checklist alone
    ("checklist+observation", 1.0, "fail", "passed", True),
    ("checklist+observation", 1.0, "pass", "failed", False),
    ("checklist+state", 1.0, "pass", "failed", True),
    ("both", 1.0, "pass", "failed", True),  # no rule above names the observation check
    ("observation", 0.0, "fail", "passed", True),
    ("observation", 1.0, "pass", "failed", False),
    ("observation", 1.0, "pass", "not_applicable", None),
    ("state+observation", 1.0, "not_available", "not_applicable", None),
    ("state+observation", 0.0, "not_available", "passed", True),
    ("state+observation", 1.0, "pass", "failed", False),
])
def test_episode_success_with_the_observation_check(rule: str, score: float, state: str, observation: str,
                                                    expected: bool | None) -> None:
    assert episode_success(rule, score, True, state, observation) is expected  # type: ignore[arg-type]
    if expected:
        assert episode_success(rule, score, False, state, observation) is False  # type: ignore[arg-type]


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


def test_a_trial_whose_success_cannot_be_told_is_left_out_of_every_aggregate() -> None:
    # rule "state" where no reference could be replayed: a score, but no success (episode_success gives None)
    assert episode_success("state", 0.5, True, "not_available") is None
    undecided = TrialOutcome(env_id="a", scenario_id="s1", score=0.5, success=None)
    decided = TrialOutcome(env_id="a", scenario_id="s1", score=1.0, success=True)
    both = aggregate([undecided, decided])
    assert (both.n_trials, both.mean_score, both.success_rate) == (1, 1.0, 1.0)  # one denominator for both
    assert both.pass_at_k == {1: 1.0}


def test_an_aggregate_of_nothing_scored_counts_no_trials() -> None:
    empty = TrialOutcome(env_id="a", scenario_id="s1", score=None, success=None)
    for outcomes in ([], [empty]):
        assert aggregate(outcomes) == Aggregate(n_scenarios=0, n_trials=0, mean_score=None, success_rate=None)
