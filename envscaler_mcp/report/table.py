"""A run's summary for the terminal: the table (one row per environment, then the overall row) fitted to
the terminal's width, and the notes printed under it (by `eval` and `report` alike)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rich.table import Table
from rich.text import Text

from envscaler_mcp._tables import Col, fit_table
from envscaler_mcp._usage import Usage
from envscaler_mcp.report.summary import GroupSummary, RunSummary


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _cost(usage: Usage) -> str:
    return "?" if usage.cost_usd is None else f"${usage.cost_usd:.2f}"


def _tokens(usage: Usage) -> str:
    n = usage.input_tokens + usage.output_tokens
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _infra(group: GroupSummary) -> str:
    if not group.infra_errors:
        return "0"
    return f"{group.infra_errors} ({_pct(group.infra_share)})"


def _state(group: GroupSummary) -> str:
    cell = f"{group.state_check_failed} fail"
    return cell + (f", {group.state_check_not_available} n/a" if group.state_check_not_available else "")


def _observation(group: GroupSummary) -> str:
    cell = f"{group.observation_failed} fail"
    return cell + (f", {group.observation_not_applicable} n/a" if group.observation_not_applicable else "")


def summary_table(summary: RunSummary, width: int = 80) -> Table:
    """The summary as a rich table no wider than `width` where it can be.

    `n` counts the episodes recorded, `scored` those with a score (the score and success columns are over
    them), `not scored` (shown when some episode had none) those that ran without a scorable check, `infra`
    those lost to infrastructure. pass@k / pass^k columns appear when there is more than one trial (with
    one, pass@1 = success); the state check and observation columns when some episode failed that check or it
    did not apply to some. At a narrow width latency, tokens, steps, cost, pass^k, the observation, pass@k and
    the state check are left out, in that order."""
    k = summary.trials
    overall = summary.overall
    state = bool(overall.state_check_failed or overall.state_check_not_available)
    observed = bool(overall.observation_failed or overall.observation_not_applicable)
    title = f"{summary.run_id}: {summary.agent}" + (f" with user {summary.user}" if summary.user else "")
    title += f" (success: {summary.success_rule})"
    right: Literal["right"] = "right"
    cols = [Col("environment", "id"), Col("n", justify=right), Col("scored", justify=right)]
    cols += [Col("not scored", justify=right)] if overall.not_scorable else []
    cols += [Col("score", justify=right), Col("success", justify=right)]
    cols += [Col("state check", drop=8, justify=right)] if state else []
    cols += [Col("observation", drop=6, justify=right)] if observed else []
    cols += [Col(f"pass@{k}", drop=7, justify=right), Col(f"pass^{k}", drop=5, justify=right)] if k > 1 else []
    cols += [Col("steps", drop=3, justify=right), Col("tokens", drop=2, justify=right),
             Col("cost", drop=4, justify=right), Col("latency", drop=1, justify=right), Col("infra", justify=right)]
    groups = [*summary.per_env, overall] if len(summary.per_env) > 1 else summary.per_env or [overall]
    rows = []
    for g in groups:
        usage = g.agent_usage + g.user_usage
        cells = [g.name, str(g.episodes), str(g.scored)] + ([str(g.not_scorable)] if overall.not_scorable else [])
        cells += [_pct(g.mean_score), _pct(g.success_rate)] + ([_state(g)] if state else [])
        cells += [_observation(g)] if observed else []
        if k > 1:
            cells += [_pct(g.pass_at_k.get(k)), _pct(g.pass_hat_k.get(k))]
        cells += [
            "-" if g.mean_steps is None else f"{g.mean_steps:.1f}",
            _tokens(usage),
            _cost(usage),
            "-" if g.mean_latency_s is None else f"{g.mean_latency_s:.2f}s",
            _infra(g),
        ]
        rows.append(cells)
    styles = ["bold" if g is overall else None for g in groups]
    return fit_table(cols, rows, width, title=title, row_styles=styles)


def summary_notes(summary: RunSummary, run_path: Path) -> list[Text]:
    """What the table cannot say, one line each: reduced isolation, why episodes had no score, which checks
    could not run, state-check failures, model errors and infrastructure errors."""
    notes = []
    reduced = {name: level for name, level in summary.isolation.items() if level != "full"}
    if reduced:
        notes.append(Text.assemble(
            ("reduced isolation", "yellow"), ": " + ", ".join(f"{name} {level}" for name, level in reduced.items())
            + f" (the layers not in force and why: isolation in {run_path / 'run.json'})."))
    overall = summary.overall
    lines = [f"{count} episode(s) could not be scored: {why}." for why, count in overall.not_scorable_why.items()]
    lines += [f"{count} check(s) could not run ({what})." for what, count in overall.unscored_checks.items()]
    if overall.state_check_failed or overall.state_check_not_available:
        lines.append(
            f"state check: {overall.state_check_failed} episode(s) changed the state unlike the reference solution "
            f"(see unexpected_changes); not available for {overall.state_check_not_available} (see "
            f"state_check_reason). Success rule: {summary.success_rule}."
        )
    if overall.observation_failed:
        lines.append(
            f"observation check: {overall.observation_failed} episode(s) did not get what the reference solution's "
            "read-only calls returned (see observation.evidence)."
        )
    if overall.model_errors:
        lines.append(
            f"{overall.model_errors} episode(s) ended on the model's own error (context overflow, refusal, "
            "invalid request): scored as failures; see model_error in results.jsonl."
        )
    notes += [Text(line) for line in lines]
    if overall.infra_errors:
        notes.append(Text.assemble(
            (f"{overall.infra_errors} of {overall.episodes} episode(s) ({100 * (overall.infra_share or 0):.1f}%) "
             "failed on infrastructure errors", "yellow"),
            " after their retries: left out of the scores (reasons in results.jsonl and the report). Re-run them "
            f"with --resume --retry-infra --out {run_path}."))
    return notes
