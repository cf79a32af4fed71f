"""The `eval` command: the harness runs the episodes into a run folder, then the report stage summarizes
it (summary.json, the table) and writes the HTML report. It sits above both, so neither imports the other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from envscaler_mcp._io import check_writable_folder
from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import EnvScalerError, UsageError

if TYPE_CHECKING:
    from envscaler_mcp.harness.run import RemoteEpisodes

# The option's choices, spelled here so that `eval --help` and a bad option do not load the harness; equal
# to harness.models.SuccessRule, harness.models.ObservationMode, launch.Transport and launch.EpisodeProcess
# (tests/foundation/test_cli_lazy.py checks).
Mode = Literal["auto", "task", "conversation"]
SuccessRule = Literal["checklist+state+observation", "checklist+state", "checklist+observation", "checklist", "state",
                      "observation", "state+observation", "both"]
ObservationMode = Literal["auto", "on", "off"]
Transport = Literal["pipe", "http", "stdio", "memory"]
EpisodeProcess = Literal["auto", "shared", "fork"]


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
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N scenarios per environment.")] = None,
    server: Annotated[str | None, typer.Option("--server", help="External stdio server command.")] = None,
    url: Annotated[str | None, typer.Option("--url", help="External Streamable HTTP server URL.")] = None,
    agent: Annotated[
        str, typer.Option("--agent", help="Agent seat: PROVIDER/MODEL, 'oracle' or 'mock'.")
    ] = "",
    agent_base_url: Annotated[
        str | None, typer.Option("--agent-base-url", help="OpenAI-compatible endpoint.")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="Simulated-user seat: PROVIDER/MODEL, or 'scripted' "
                                                      "(reveals a scenario's turns verbatim, no model).")] = None,
    mode: Annotated[
        Mode, typer.Option("--mode", help="auto: conversation when --user is given, else task."),
    ] = "auto",
    trials: Annotated[int, typer.Option("--trials", min=1, help="Trials per scenario (pass@k, pass^k).")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Episodes at the same time.")] = 4,
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Agent steps per episode.")] = 30,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.1,
            help="Seconds per episode (default: from the agent's measured speed for the local model, else 600).",
        ),
    ] = None,
    infra_retries: Annotated[int, typer.Option("--infra-retries", min=0, help="Retries after an infra error.")] = 2,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, max=2.0, help="Agent temperature.")] = 0.0,
    validator_timeout: Annotated[
        float, typer.Option("--validator-timeout", min=0.01, help="Seconds per validator.")
    ] = 2.0,
    transport: Annotated[
        Transport,
        typer.Option(
            "--transport",
            help="pipe (one server per environment over its stdin/stdout; the fastest) | http (one shared HTTP "
            "server per environment) | stdio (a process per episode) | memory (in process, trusted code only).",
        ),
    ] = "pipe",
    episode_process: Annotated[
        EpisodeProcess,
        typer.Option(
            "--episode-process",
            help="fork (every episode in a process of its own: one episode's environment code cannot reach "
            "another's state or the admin token) | shared (a server's episodes in one process) | auto (fork "
            "unless the environment is hand-authored). memory always shares.",
        ),
    ] = "auto",
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default runs/<run id>).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --out.")] = False,
    retry_infra: Annotated[
        bool, typer.Option("--retry-infra", help="With --resume: also re-run the infra-error episodes.")
    ] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run the episodes on a Ray cluster: auto (the running one), local (a private one here) or an "
            "address; --concurrency is then per worker. Needs the package's [ray] extra (docs/ray.md).",
        ),
    ] = None,
    ray_workers: Annotated[
        int | None, typer.Option("--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")
    ] = None,
    max_infra: Annotated[
        float,
        typer.Option(
            "--max-infra",
            min=0.0,
            max=1.0,
            help="Exit with code 3 when more than this share of episodes ended in infrastructure errors "
            "(their scores are missing, so the run's numbers cover less than was asked).",
        ),
    ] = 0.1,
    success: Annotated[
        SuccessRule,
        typer.Option(
            "--success",
            help="The verdicts an episode must not fail, joined by '+': checklist (every item passes), state "
            "(the final state matches the reference solution's, free fields aside), observation (the agent's "
            "calls returned what the reference's read-only calls did); 'state' or 'observation' alone must pass. "
            "'both' = checklist+state. The episode must also have completed.",
        ),
    ] = "checklist+state+observation",
    observation: Annotated[
        ObservationMode,
        typer.Option(
            "--observation",
            help="The observation check: auto (where the reference solution calls a tool the server marks "
            "read-only), on (also where the server marks none: every reference result), off.",
        ),
    ] = "auto",
    server_timeout: Annotated[
        float,
        typer.Option("--server-timeout", min=0.1, help="Seconds a server may stay silent before it counts as hung."),
    ] = 60.0,
    max_shown_result: Annotated[
        int, typer.Option("--max-shown-result", min=100, help="Characters of a tool result shown to the agent; "
                          "longer ones are cut with a marker (the full length is recorded).")
    ] = 50_000,
    max_tool_result: Annotated[
        int, typer.Option("--max-tool-result", min=100, help="Characters of a tool result beyond which the "
                          "environment is at fault: the episode is infra_error with the reason.")
    ] = 5_000_000,
    max_state: Annotated[
        int, typer.Option("--max-state", min=100, help="Bytes of a final state's JSON beyond which the environment "
                          "is at fault: the episode is infra_error with the reason.")
    ] = 5_000_000,
    max_answer: Annotated[
        int, typer.Option("--max-answer", min=100, help="Characters of the agent's answer; a longer one is the "
                          "model's fault (model_error answer_too_long), scored cut to this length.")
    ] = 50_000,
    max_transcript: Annotated[
        int, typer.Option("--max-transcript", min=1_000, help="Characters of message text stored per episode in "
                          "results.jsonl; over it each message is cut to an equal share.")
    ] = 2_000_000,
    home: HomeOption = None,
) -> None:
    """Evaluate an agent on environments' scenarios; results, summary and HTML report go to the run folder."""
    from rich.console import Console

    from envscaler_mcp import _interrupt
    from envscaler_mcp.harness.config import RunConfig
    from envscaler_mcp.harness.limits import OutputLimits
    from envscaler_mcp.harness.models import EpisodeConfig
    from envscaler_mcp.harness.run import new_run_id, run_eval
    from envscaler_mcp.harness.rundir import RunDir
    from envscaler_mcp.providers.base import GenerationSettings
    from envscaler_mcp.report.html import write_report
    from envscaler_mcp.report.summary import finish_run
    from envscaler_mcp.report.table import summary_notes, summary_table

    if not agent:
        raise UsageError(
            "say which agent to evaluate: --agent PROVIDER/MODEL (or 'oracle' to check the setup)"
        )
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
        episode_process=episode_process,
        validator_timeout_s=validator_timeout,
        episode=EpisodeConfig(
            mode=resolved,
            max_steps=max_steps,
            timeout_s=timeout,
            infra_retries=infra_retries,
            server_timeout_s=server_timeout,
            success=success,
            observation=observation,
            agent_settings=GenerationSettings(temperature=temperature, max_tokens=4096),
            limits=OutputLimits(shown_result_chars=max_shown_result, tool_result_chars=max_tool_result,
                                state_bytes=max_state, answer_chars=max_answer, transcript_chars=max_transcript),
        ),
        progress=progress,
        ray=ray,
        ray_workers=ray_workers,
    )
    run_path = out or Path("runs") / new_run_id()
    check_writable_folder(run_path, what="the run folder")
    console = Console()
    try:
        _interrupt.run(
            lambda: run_eval(
                config, run_path, resume=resume, retry_infra=retry_infra, console=Console(stderr=True),
                remote=_ray_episodes() if ray else None,
            )
        )
    except KeyboardInterrupt:
        if RunDir(run_path).manifest_path.exists():
            summary = finish_run(run_path)
            console.print(
                f"[yellow]interrupted[/]: {summary.overall.episodes} of {summary.planned} episodes are "
                f"kept in {run_path}. Continue with the same command plus --resume --out {run_path}"
            )
        raise typer.Exit(130) from None
    except EnvScalerError:  # the run stopped (a usage error, a harness bug): summarize what finished
        if RunDir(run_path).manifest_path.exists():
            finish_run(run_path)
        raise
    summary = finish_run(run_path)
    console.print(summary_table(summary, console.width))
    for note in summary_notes(summary, run_path):
        console.print(note, highlight=False)
    overall = summary.overall
    report = write_report(run_path)
    console.print(f"results: {run_path / 'results.jsonl'}\nreport:  {report}")
    if (overall.infra_share or 0) > max_infra:
        console.print(
            f"[red]infrastructure errors in {100 * (overall.infra_share or 0):.1f}% of the episodes exceed "
            f"--max-infra {100 * max_infra:g}%[/]: these scores do not cover the run."
        )
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add the `eval` command to the main app."""
    app.command("eval")(eval_command)


def _ray_episodes() -> RemoteEpisodes:
    """The Ray runner of `--ray` (imported only then: `ray` is an optional extra)."""
    from envscaler_mcp.adapters.ray_run import RayEpisodes

    return RayEpisodes()
