"""Run summaries (summary.json): mean checklist score, success rate, pass@k / pass^k, tokens, cost, steps,
latency, infra errors. Computed from a run folder the harness wrote; printed by report/table.py."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import NamedTuple

from pydantic import BaseModel, Field

from envscaler_mcp._io import atomic_write_json
from envscaler_mcp._usage import Usage
from envscaler_mcp.harness.config import RunManifest
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import SUMMARY_FILE, RunDir
from envscaler_mcp.scoring.metrics import TrialOutcome, aggregate


class GroupSummary(BaseModel):
    """Aggregates over a group of episodes (one environment, or the whole run); scores via scoring.metrics."""

    name: str = Field(description="Environment id, or 'overall'.")
    episodes: int = Field(description="Episodes recorded (all statuses).")
    scored: int = Field(description="Episodes with a score (not infra errors, final state readable).")
    infra_errors: int = Field(description="Episodes lost to infrastructure failures (excluded from scores).")
    infra_share: float | None = Field(
        None, description="infra_errors / episodes: how much of the run the scores do not cover."
    )
    model_errors: int = Field(
        0, description="Episodes the agent's model ended by its own fault (context overflow, refusal, invalid "
        "request): scored, counted as failures."
    )
    not_scorable: int = Field(
        0, description="Episodes without a score: no checklist item could be scored (reasons in not_scorable_why)."
    )
    state_check_passed: int = Field(0, description="Episodes whose final state passed the state check.")
    state_check_failed: int = Field(
        0, description="Episodes whose final state differs from the reference solution's (collateral changes, "
        "mismatches): failures under --success state and both."
    )
    state_check_not_available: int = Field(
        0, description="Episodes (not infra errors) without a state check: no reference solution, its replay "
        "failed, or no final state. Under --success both they are judged on the checklist alone."
    )
    observation_passed: int = Field(0, description="Episodes whose calls returned what the reference solution's "
                                    "read-only calls did (the observation check passed).")
    observation_failed: int = Field(
        0, description="Episodes that did not get some result of the reference solution's read-only calls: failures "
        "under a --success rule with 'observation' (the default)."
    )
    observation_not_applicable: int = Field(
        0, description="Episodes (not infra errors) the observation check did not apply to (turned off, no "
        "read-only reference call, no reference): judged on the rest of the success rule."
    )
    status_counts: dict[str, int] = Field(default_factory=dict, description="Episodes per status.")
    mean_score: float | None = Field(None, description="Mean checklist score of scored episodes.")
    success_rate: float | None = Field(None, description="Share of scored episodes that succeeded.")
    pass_at_k: dict[int, float] = Field(
        default_factory=dict,
        description="k -> mean over scenarios of pass@k (k up to the fewest scored trials of any scenario).",
    )
    pass_hat_k: dict[int, float] = Field(
        default_factory=dict, description="k -> mean over scenarios of pass^k."
    )
    mean_steps: float | None = Field(None, description="Mean agent steps per episode (non-infra).")
    mean_tool_calls: float | None = Field(None, description="Mean tool calls per episode (non-infra).")
    mean_latency_s: float | None = Field(None, description="Mean episode wall time (non-infra).")
    agent_usage: Usage = Field(default_factory=Usage, description="Agent-seat tokens and cost, summed.")
    user_usage: Usage = Field(default_factory=Usage, description="Simulated-user tokens and cost, summed.")
    not_scorable_why: dict[str, int] = Field(
        default_factory=dict, description="Why episodes had no score -> how many episodes (e.g. an empty "
        "checklist, or only state checks on a server without an admin plane)."
    )
    unscored_checks: dict[str, int] = Field(
        default_factory=dict, description="Checks that could not run -> how many: '<kind> checks: <reason>' "
        "(e.g. state checks on a server without an admin plane), over episodes that were not infra errors."
    )


class RunSummary(BaseModel):
    """summary.json."""

    run_id: str = Field(description="Run id.")
    agent: str = Field(description="Agent seat.")
    user: str | None = Field(None, description="Simulated-user seat.")
    mode: str = Field(description="'task' or 'conversation'.")
    trials: int = Field(description="Trials per scenario.")
    planned: int = Field(0, description="Episodes planned ((scenario, trial) pairs).")
    success_rule: str = Field("checklist+state+observation", description="What success means in this run: the "
                              "verdicts an episode must not fail (EpisodeConfig.success).")
    overall: GroupSummary = Field(description="Aggregates over the whole run.")
    per_env: list[GroupSummary] = Field(default_factory=list, description="Aggregates per environment.")
    isolation: dict[str, str] = Field(
        default_factory=dict,
        description="Isolation level in force ('full', 'partial', 'off') of the validators and of each "
        "environment's servers, from run.json (details there).",
    )


def _mean(values: Sequence[float]) -> float | None:
    return round(fmean(values), 4) if values else None


def summarize_group(name: str, results: Sequence[EpisodeResult], trials: int) -> GroupSummary:
    """Aggregate one group of episodes."""
    ran = [r for r in results if r.status != "infra_error"]
    scored = [r for r in ran if r.score is not None]
    statuses: dict[str, int] = defaultdict(int)
    for r in results:
        statuses[r.status] += 1
    agg = aggregate(
        TrialOutcome(env_id=r.env_id, scenario_id=r.scenario_id, score=r.score, success=r.success)
        for r in scored
    )
    agent_usage, user_usage = Usage(), Usage()
    for r in results:
        agent_usage, user_usage = agent_usage + r.agent_usage, user_usage + r.user_usage
    return GroupSummary(
        name=name,
        episodes=len(results),
        scored=len(scored),
        infra_errors=statuses.get("infra_error", 0),
        infra_share=round(statuses.get("infra_error", 0) / len(results), 4) if results else None,
        model_errors=statuses.get("model_error", 0),
        not_scorable=sum(1 for r in ran if r.score is None),
        state_check_passed=sum(1 for r in ran if r.state_check == "pass"),
        state_check_failed=sum(1 for r in ran if r.state_check == "fail"),
        state_check_not_available=sum(1 for r in ran if r.state_check == "not_available"),
        observation_passed=sum(1 for r in ran if r.observation.status == "passed"),
        observation_failed=sum(1 for r in ran if r.observation.status == "failed"),
        observation_not_applicable=sum(1 for r in ran if r.observation.status == "not_applicable"),
        status_counts=dict(sorted(statuses.items())),
        mean_score=agg.mean_score,
        success_rate=agg.success_rate,
        pass_at_k=agg.pass_at_k,
        pass_hat_k=agg.pass_hat_k,
        mean_steps=_mean([r.steps for r in ran]),
        mean_tool_calls=_mean([r.tool_calls for r in ran]),
        mean_latency_s=_mean([r.latency_s for r in ran]),
        agent_usage=agent_usage,
        user_usage=user_usage,
        **_unscored(ran),
    )


def _unscored(ran: Sequence[EpisodeResult]) -> dict[str, dict[str, int]]:
    """Why episodes had no score, and which checks could not run, each with its count."""
    why: dict[str, int] = defaultdict(int)
    checks: dict[str, int] = defaultdict(int)
    for r in ran:
        lost = [c for c in r.checks if c.status == "not_scorable"]
        for c in lost:
            checks[f"{c.kind} checks: {c.reason}"] += 1
        if r.score is None:
            reasons = sorted({c.reason for c in lost}) or [
                "every item already held at the start: nothing to earn" if r.checks else "the scenario's checklist is empty"]
            why["; ".join(reasons)] += 1
    return {"not_scorable_why": dict(sorted(why.items())), "unscored_checks": dict(sorted(checks.items()))}


def summarize(
    results: Sequence[EpisodeResult],
    *,
    run_id: str,
    agent: str,
    user: str | None,
    mode: str,
    trials: int,
    planned: int = 0,
    success_rule: str = "checklist+state+observation",
) -> RunSummary:
    """Summaries per environment and overall."""
    by_env: dict[str, list[EpisodeResult]] = defaultdict(list)
    for r in results:
        by_env[r.env_id].append(r)
    return RunSummary(
        run_id=run_id,
        agent=agent,
        user=user,
        mode=mode,
        trials=trials,
        planned=planned,
        success_rule=success_rule,
        overall=summarize_group("overall", results, trials),
        per_env=[summarize_group(env, rs, trials) for env, rs in sorted(by_env.items())],
    )


def summarize_run(results: Sequence[EpisodeResult], manifest: RunManifest, planned: int | None = None) -> RunSummary:
    """Summarize a run's episode results as its manifest describes it (planned episodes by default)."""
    config = manifest.config
    if planned is None:
        planned = sum(len(ids) for ids in manifest.scenario_ids.values()) * config.trials
    summary = summarize(
        results,
        run_id=manifest.run_id,
        agent=config.agent,
        user=config.user,
        mode=config.episode.mode,
        trials=config.trials,
        planned=planned,
        success_rule=config.episode.success,
    )
    summary.isolation = {name: report.level for name, report in manifest.isolation.items()}
    return summary


class FinishedRun(NamedTuple):
    """A run folder read once: its manifest, its episode results and their summary (what the HTML report
    needs too, so `eval` does not read and parse results.jsonl a second time)."""

    manifest: RunManifest
    results: list[EpisodeResult]
    summary: RunSummary


def finish_run(path: Path) -> RunSummary:
    """Summarize what a run folder's results.jsonl holds (as its run.json plans it), write summary.json
    atomically and return the summary. Works on a finished, interrupted or partial run."""
    return read_and_finish(path).summary


def read_and_finish(path: Path) -> FinishedRun:
    """finish_run, keeping what it read: the manifest and results, with the summary written."""
    run_dir = RunDir(path)
    manifest = run_dir.read_manifest()
    results = run_dir.read_results()
    summary = summarize_run(results, manifest)
    atomic_write_json(run_dir.path / SUMMARY_FILE, summary.model_dump(mode="json"))
    return FinishedRun(manifest, results, summary)
