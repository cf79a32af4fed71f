"""Run summaries (summary.json): mean checklist score, success rate, pass@k / pass^k, tokens, cost, steps,
latency, infra errors. Computed from a run folder the harness wrote; printed by report/table.py."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path

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


class _Mean:
    """A mean kept as an exact running sum (a float sum's result depends on its order; this is fmean's)."""

    def __init__(self) -> None:
        self.total, self.n = Fraction(0), 0

    def add(self, value: float) -> None:
        self.total += Fraction(value)
        self.n += 1

    def value(self) -> float | None:
        return round(float(self.total) / self.n, 4) if self.n else None


class _Group:
    """One group's aggregates, kept as the episodes are read one at a time: counts, sums and, per scored
    episode, its (scenario, score, success) for pass@k. No episode record is held."""

    def __init__(self, name: str) -> None:
        self.name, self.episodes = name, 0
        self.statuses: dict[str, int] = defaultdict(int)
        self.counts: dict[str, int] = defaultdict(int)
        self.outcomes: list[tuple[str, str, float | None, bool | None]] = []
        self.steps, self.tool_calls, self.latency = _Mean(), _Mean(), _Mean()
        self.agent_usage, self.user_usage = Usage(), Usage()
        self.why: dict[str, int] = defaultdict(int)
        self.checks: dict[str, int] = defaultdict(int)

    def add(self, r: EpisodeResult, outcome: tuple[str, str, float | None, bool | None]) -> None:
        self.episodes += 1
        self.statuses[r.status] += 1
        self.agent_usage, self.user_usage = self.agent_usage + r.agent_usage, self.user_usage + r.user_usage
        if r.status == "infra_error":
            return
        self.counts[f"state_{r.state_check}"] += 1
        self.counts[f"observation_{r.observation.status}"] += 1
        self.steps.add(r.steps)
        self.tool_calls.add(r.tool_calls)
        self.latency.add(r.latency_s)
        if r.score is not None:
            self.outcomes.append(outcome)
        lost = [c for c in r.checks if c.status == "not_scorable"]
        for c in lost:
            self.checks[f"{c.kind} checks: {c.reason}"] += 1
        if r.score is None:
            self.counts["not_scorable"] += 1
            reasons = sorted({c.reason for c in lost}) or [
                "every item already held at the start: nothing to earn" if r.checks else "the scenario's checklist is empty"]
            self.why["; ".join(reasons)] += 1

    def summary(self) -> GroupSummary:
        agg = aggregate(TrialOutcome(env_id=e, scenario_id=s, score=score, success=ok)
                        for e, s, score, ok in self.outcomes)
        infra, counts = self.statuses.get("infra_error", 0), self.counts
        return GroupSummary(
            name=self.name,
            episodes=self.episodes,
            scored=len(self.outcomes),
            infra_errors=infra,
            infra_share=round(infra / self.episodes, 4) if self.episodes else None,
            model_errors=self.statuses.get("model_error", 0),
            not_scorable=counts["not_scorable"],
            state_check_passed=counts["state_pass"],
            state_check_failed=counts["state_fail"],
            state_check_not_available=counts["state_not_available"],
            observation_passed=counts["observation_passed"],
            observation_failed=counts["observation_failed"],
            observation_not_applicable=counts["observation_not_applicable"],
            status_counts=dict(sorted(self.statuses.items())),
            mean_score=agg.mean_score,
            success_rate=agg.success_rate,
            pass_at_k=agg.pass_at_k,
            pass_hat_k=agg.pass_hat_k,
            mean_steps=self.steps.value(),
            mean_tool_calls=self.tool_calls.value(),
            mean_latency_s=self.latency.value(),
            agent_usage=self.agent_usage,
            user_usage=self.user_usage,
            not_scorable_why=dict(sorted(self.why.items())),
            unscored_checks=dict(sorted(self.checks.items())),
        )


def _outcome(r: EpisodeResult) -> tuple[str, str, float | None, bool | None]:
    return sys.intern(r.env_id), sys.intern(r.scenario_id), r.score, r.success


def summarize_group(name: str, results: Iterable[EpisodeResult], trials: int) -> GroupSummary:
    """Aggregate one group of episodes (read one at a time)."""
    group = _Group(name)
    for r in results:
        group.add(r, _outcome(r))
    return group.summary()


class Summarizer:
    """The aggregates of a run's episodes, fed one at a time (`add`): what is held is the aggregates, not the
    records. `summarize` reads an iterable through one; a run being written feeds one as it goes
    (report/live.py)."""

    def __init__(self) -> None:
        self._overall = _Group("overall")
        self._by_env: dict[str, _Group] = {}

    def add(self, r: EpisodeResult) -> None:
        outcome = _outcome(r)
        self._overall.add(r, outcome)
        group = self._by_env.get(outcome[0])
        if group is None:
            group = self._by_env[outcome[0]] = _Group(outcome[0])
        group.add(r, outcome)

    def summary(self, *, run_id: str, agent: str, user: str | None, mode: str, trials: int, planned: int = 0,
                success_rule: str = "checklist+state+observation") -> RunSummary:
        """Summaries per environment and overall of what was added."""
        return RunSummary(
            run_id=run_id,
            agent=agent,
            user=user,
            mode=mode,
            trials=trials,
            planned=planned,
            success_rule=success_rule,
            overall=self._overall.summary(),
            per_env=[group.summary() for _, group in sorted(self._by_env.items())],
        )


def summarize(
    results: Iterable[EpisodeResult],
    *,
    run_id: str,
    agent: str,
    user: str | None,
    mode: str,
    trials: int,
    planned: int = 0,
    success_rule: str = "checklist+state+observation",
) -> RunSummary:
    """Summaries per environment and overall, reading the results one at a time: what is held is the
    aggregates, not the records (a run of any length is summarized in bounded memory)."""
    return _fed(results).summary(run_id=run_id, agent=agent, user=user, mode=mode, trials=trials, planned=planned,
                                 success_rule=success_rule)


def _fed(results: Iterable[EpisodeResult]) -> Summarizer:
    summarizer = Summarizer()
    for r in results:
        summarizer.add(r)
    return summarizer


def summarize_run(results: Iterable[EpisodeResult], manifest: RunManifest, planned: int | None = None) -> RunSummary:
    """Summarize a run's episode results as its manifest describes it (planned episodes by default)."""
    return run_summary(_fed(results), manifest, planned)


def run_summary(summarizer: Summarizer, manifest: RunManifest, planned: int | None = None) -> RunSummary:
    """The summary of what `summarizer` was fed, as the run's manifest describes the run (planned episodes by
    default)."""
    config = manifest.config
    if planned is None:
        planned = sum(len(ids) for ids in manifest.scenario_ids.values()) * config.trials
    summary = summarizer.summary(
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


def finish_run(path: Path) -> RunSummary:
    """Summarize what a run folder's results.jsonl holds (as its run.json plans it), write summary.json
    atomically and return the summary. Works on a finished, interrupted or partial run."""
    run_dir = RunDir(path)
    return write_summary(path, summarize_run((r for _, _, r in run_dir.scan_results()), run_dir.read_manifest()))


def write_summary(path: Path, summary: RunSummary) -> RunSummary:
    """Write a run folder's summary.json atomically; return the summary."""
    atomic_write_json(Path(path) / SUMMARY_FILE, summary.model_dump(mode="json"))
    return summary
