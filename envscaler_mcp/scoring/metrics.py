"""The score and success rule, and the metrics over trials: the one module every score is computed in.

* An item that already held before the agent acted (on the initial state, and on an empty transcript) is a
  **guard**: it protects what must stay true ("the other order is left alone", "nothing changed") and earns
  nothing by itself. Every other item is a **goal**: what the task asks to become true (or to be said).
* checklist score = passed goals / scorable goals, rounded to 4 decimals; 0.0 when any scorable guard failed
  (the agent broke something the task did not ask it to touch); None when no goal could be scored.
  An agent that changes nothing and says nothing scores 0.0 on every scenario with a goal.
* success (`episode_success`), under the run's rule, a `+`-joined set of checks (default
  `checklist+state+observation`; `both` = `checklist+state`): the episode completed and none of the named
  checks failed (`checklist`: score 1.0; `state`: the state check did not fail; `observation`: the
  observation check did not fail). A check that does not apply (no reference, no read-only reference call)
  decides nothing; None when none of the named checks applies, or the score is None.
* over n trials of one scenario with c successes (unbiased estimators):
  pass@k = 1 - C(n-c, k) / C(n, k)  (at least one of k trials succeeds),
  pass^k = C(c, k) / C(n, k)        (all k trials succeed; tau-bench's reliability measure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from math import comb
from typing import NamedTuple

from pydantic import BaseModel, Field

from envscaler_mcp._choices import SuccessRule
from envscaler_mcp.compare.statecheck import StateCheckStatus
from envscaler_mcp.transcript.observation import ObservationStatus


class ItemVerdict(NamedTuple):
    """One checklist item as the score sees it."""

    passed: bool | None  # None: not scorable (no validator, no final state, no transcript)
    at_start: bool  # it already held before the agent acted: a guard, not a goal


def checklist_score(verdicts: Sequence[ItemVerdict]) -> float | None:
    """Passed goals / scorable goals (4 decimals); 0.0 when a scorable guard failed; None without a scorable
    goal (see the module docstring)."""
    scored = [v for v in verdicts if v.passed is not None]
    if any(v.at_start and not v.passed for v in scored):
        return 0.0
    goals = [v for v in scored if not v.at_start]
    if not goals:
        return None
    return round(sum(1 for v in goals if v.passed) / len(goals), 4)


def episode_success(rule: SuccessRule, score: float | None, completed: bool, state_check: StateCheckStatus,
                    observation: ObservationStatus = "not_applicable") -> bool | None:
    """Success of a scored episode under `rule`; None when it cannot be told (see the module docstring)."""
    if score is None:
        return None
    parts = set(("checklist+state" if rule == "both" else rule).split("+"))
    decided = {"checklist"} if "checklist" in parts else set()
    decided |= {"state"} if state_check != "not_available" else set()
    decided |= {"observation"} if observation != "not_applicable" else set()
    if not parts & decided:  # a rule of checks none of which applies
        return None
    failed = (("checklist" in parts and score != 1.0) or ("state" in parts and state_check == "fail")
              or ("observation" in parts and observation == "failed"))
    return completed and not failed


def _check_nck(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= successes <= trials, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of trials ({n}), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials (drawn from n, c of them successful) succeeds."""
    _check_nck(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k trials (drawn from n, c of them successful) succeed (pass^k)."""
    _check_nck(n, c, k)
    return comb(c, k) / comb(n, k)


class TrialOutcome(BaseModel):
    """One scored attempt at one scenario."""

    env_id: str = Field(description="Environment id.")
    scenario_id: str = Field(description="Scenario id.")
    score: float | None = Field(description="Checklist score (None: empty checklist or not scored).")
    success: bool | None = Field(description="All checks passed (None: not scored).")


class Aggregate(BaseModel):
    """Scores over a group of scenarios (one environment, or all)."""

    n_scenarios: int = Field(description="Scenarios with at least one scored trial.")
    n_trials: int = Field(description="Scored trials.")
    mean_score: float | None = Field(description="Mean checklist score over scored trials (4 decimals).")
    success_rate: float | None = Field(description="Fraction of scored trials where every check passed.")
    pass_at_k: dict[int, float] = Field(
        default_factory=dict, description="k -> mean pass@k over scenarios, for k up to the fewest trials."
    )
    pass_hat_k: dict[int, float] = Field(
        default_factory=dict, description="k -> mean pass^k over scenarios, for k up to the fewest trials."
    )


def aggregate(outcomes: Iterable[TrialOutcome]) -> Aggregate:
    """Mean score, success rate, pass@k and pass^k (k = 1 .. fewest trials of any scenario).

    Trials whose score or success is None (not scored, e.g. an infrastructure error) are left out.
    """
    per_scenario: dict[tuple[str, str], list[bool]] = defaultdict(list)
    scores: list[float] = []
    for o in outcomes:
        if o.score is None or o.success is None:
            continue
        per_scenario[(o.env_id, o.scenario_id)].append(o.success)
        scores.append(o.score)
    if not scores:
        return Aggregate(n_scenarios=0, n_trials=0, mean_score=None, success_rate=None)
    successes = [s for trials in per_scenario.values() for s in trials]
    k_max = min(len(trials) for trials in per_scenario.values())
    at_k: dict[int, float] = {}
    hat_k: dict[int, float] = {}
    for k in range(1, k_max + 1):
        groups = [(len(t), sum(t)) for t in per_scenario.values()]
        at_k[k] = round(sum(pass_at_k(n, c, k) for n, c in groups) / len(groups), 4)
        hat_k[k] = round(sum(pass_hat_k(n, c, k) for n, c in groups) / len(groups), 4)
    return Aggregate(
        n_scenarios=len(per_scenario),
        n_trials=len(scores),
        mean_score=round(sum(scores) / len(scores), 4),
        success_rate=round(sum(successes) / len(successes), 4),
        pass_at_k=at_k,
        pass_hat_k=hat_k,
    )


def aggregate_by_env(outcomes: Iterable[TrialOutcome]) -> tuple[dict[str, Aggregate], Aggregate]:
    """Per-environment aggregates (sorted by env id) and the overall aggregate."""
    items = list(outcomes)
    by_env: dict[str, list[TrialOutcome]] = defaultdict(list)
    for o in items:
        by_env[o.env_id].append(o)
    return {env: aggregate(by_env[env]) for env in sorted(by_env)}, aggregate(items)
