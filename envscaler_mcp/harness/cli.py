"""CLI commands of the harness stage: `eval`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.run import finish, new_run_id, run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.summary import summary_table
from envscaler_mcp.providers.base import GenerationSettings


def _split_ids(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for v in values for part in v.split(",") if part.strip()]


def eval_command(
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="Environment id or folder (repeatable, or a comma list)."),
    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Every bundled environment.")] = False,
    scenarios: Annotated[Path | None, typer.Option("--scenarios", help="Scenario set (JSONL).")] = None,
    scenario_ids: Annotated[
        list[str] | None, typer.Option("--scenario-ids", help="Only these ids (comma list).")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N scenarios per environment.")] = None,
    server: Annotated[str | None, typer.Option("--server", help="External stdio server command.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="External Streamable HTTP server URL.")] = None,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent seat: PROVIDER/MODEL, 'oracle' or 'mock'.")
    ] = "",
    agent_base_url: Annotated[
        str | None, typer.Option("--agent-base-url", help="OpenAI-compatible endpoint.")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="Simulated-user seat: PROVIDER/MODEL.")] = None,
    mode: Annotated[
        str,
        typer.Option("--mode", help="auto | task | conversation (auto: conversation when --user is given)."),
    ] = "auto",
    trials: Annotated[int, typer.Option("--trials", help="Trials per scenario (pass@k, pass^k).")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Episodes at the same time.")] = 4,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Agent steps per episode.")] = 30,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            help="Seconds per episode (default: from the agent's measured speed for the local model, else 600).",
        ),
    ] = None,
    infra_retries: Annotated[int, typer.Option("--infra-retries", help="Retries after an infra error.")] = 2,
    temperature: Annotated[float, typer.Option("--temperature", help="Agent temperature.")] = 0.0,
    validator_timeout: Annotated[
        float, typer.Option("--validator-timeout", help="Seconds per validator.")
    ] = 2.0,
    transport: Annotated[
        str,
        typer.Option(
            "--transport",
            help="http (shared server per environment) | stdio (process per episode) | memory (in process).",
        ),
    ] = "http",
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default runs/<run id>).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --out.")] = False,
    retry_infra: Annotated[
        bool, typer.Option("--retry-infra", help="With --resume: also re-run the infra-error episodes.")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
) -> None:
    """Evaluate an agent on environments' scenarios; results, summary and HTML report go to the run folder."""
    if not agent:
        raise UsageError(
            "say which agent to evaluate: --agent PROVIDER/MODEL (or 'oracle' to check the setup)"
        )
    if mode not in ("auto", "task", "conversation"):
        raise UsageError(f"--mode must be auto, task or conversation, not {mode!r}")
    if transport not in ("http", "stdio", "memory"):
        raise UsageError(f"--transport must be http, stdio or memory, not {transport!r}")
    resolved = ("conversation" if user else "task") if mode == "auto" else mode
    if resolved == "conversation" and not user:
        raise UsageError("--mode conversation needs a simulated user: pass --user PROVIDER/MODEL")
    if resume and out is None:
        raise UsageError("--resume needs --out RUN_DIR (the folder of the run to continue)")
    config = RunConfig(
        envs=_split_ids(env) or [],
        all_envs=all_envs,
        scenarios_file=str(scenarios) if scenarios else None,
        scenario_ids=_split_ids(scenario_ids),
        limit=limit,
        server_cmd=server,
        url=url,
        agent=agent,
        agent_base_url=agent_base_url,
        user=user if resolved == "conversation" else None,
        trials=trials,
        concurrency=concurrency,
        transport=transport,
        validator_timeout_s=validator_timeout,
        episode=EpisodeConfig(
            mode=resolved,
            max_steps=max_steps,
            timeout_s=timeout,
            infra_retries=infra_retries,
            agent_settings=GenerationSettings(temperature=temperature, max_tokens=4096),
        ),
        progress=progress,
    )
    run_path = out or Path("runs") / new_run_id()
    console = Console()
    try:
        summary = anyio.run(
            lambda: run_eval(
                config, run_path, resume=resume, retry_infra=retry_infra, console=Console(stderr=True)
            )
        )
    except KeyboardInterrupt:
        run_dir = RunDir(run_path)
        if run_dir.manifest_path.exists():
            summary = finish(run_dir, run_dir.read_manifest())
            console.print(
                f"[yellow]interrupted[/]: {summary.overall.episodes} of {summary.planned} episodes are "
                f"kept in {run_path}. Continue with the same command plus --resume --out {run_path}"
            )
        raise typer.Exit(130) from None
    console.print(summary_table(summary))
    if summary.overall.not_scorable:
        console.print(
            f"{summary.overall.not_scorable} episode(s) could not be scored: the server has no admin plane."
        )
    if summary.overall.infra_errors:
        console.print(
            f"[yellow]{summary.overall.infra_errors} episode(s) failed on infrastructure errors[/] (left out "
            "of the scores; reasons in results.jsonl and the report)."
        )
    from envscaler_mcp.report.html import write_report

    report = write_report(run_path)
    console.print(f"results: {run_path / 'results.jsonl'}\nreport:  {report}")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("eval")(eval_command)
