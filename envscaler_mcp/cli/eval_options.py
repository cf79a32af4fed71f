"""The options of `eval`, declared once: a typed dataclass whose fields are the command's options (typer reads
them through envscaler_mcp/_command.py), and the one place they are checked and turned into the run's RunConfig.

Typing and typer only at import time: `eval --help` and a bad choice load no stage (the choices are
envscaler_mcp/_choices.py's, which the stages use too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from envscaler_mcp._choices import (
    CPU_SEAT_CONCURRENCY,
    MODEL_SEAT_CONCURRENCY,
    EpisodeProcess,
    ModeChoice,
    ObservationMode,
    SuccessRule,
    Transport,
    parse_workers,
)
from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError

if TYPE_CHECKING:
    from envscaler_mcp.harness.config import RunConfig


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    """What `eval` was given: one field per command-line option, in the order `--help` lists them."""

    env: Annotated[
        list[str] | None, typer.Option("--env", help="Environment id or folder (repeatable, or a comma list).")
    ] = None
    all_envs: Annotated[bool, typer.Option("--all", help="Every bundled environment.")] = False
    scenarios: Annotated[Path | None, typer.Option("--scenarios", help="Scenario set (JSONL).")] = None
    scenario_ids: Annotated[
        list[str] | None, typer.Option("--scenario-ids", help="Only these ids (comma list).")
    ] = None
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N scenarios per environment.")] = None
    server: Annotated[str | None, typer.Option("--server", help="External stdio server command.")] = None
    url: Annotated[str | None, typer.Option("--url", help="External Streamable HTTP server URL.")] = None
    agent: Annotated[str, typer.Option("--agent", help="Agent seat: PROVIDER/MODEL, 'oracle' or 'mock'.")] = ""
    agent_base_url: Annotated[
        str | None, typer.Option("--agent-base-url", help="OpenAI-compatible endpoint.")
    ] = None
    user: Annotated[str | None, typer.Option("--user", help="Simulated-user seat: PROVIDER/MODEL, or 'scripted' "
                                                      "(reveals a scenario's turns verbatim, no model).")] = None
    mode: Annotated[
        ModeChoice, typer.Option("--mode", help="auto: conversation when --user is given, else task."),
    ] = "auto"
    trials: Annotated[int, typer.Option("--trials", min=1, help="Trials per scenario (pass@k, pass^k).")] = 1
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", min=1,
        help=f"Episodes at the same time (default: {CPU_SEAT_CONCURRENCY} for an oracle or mock run, whose work is "
        f"this machine's CPU; {MODEL_SEAT_CONCURRENCY} for a model's seat, which also paces its API).",
    )] = None
    max_steps: Annotated[int, typer.Option("--max-steps", min=1, help="Agent steps per episode.")] = 30
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.1,
        help="Seconds per episode (default: from the agent's measured speed for the local model, else 600).",
    )] = None
    infra_retries: Annotated[int, typer.Option("--infra-retries", min=0, help="Retries after an infra error.")] = 2
    temperature: Annotated[
        float, typer.Option("--temperature", min=0.0, max=2.0, help="Agent temperature.")
    ] = 0.0
    validator_timeout: Annotated[
        float, typer.Option("--validator-timeout", min=0.01, help="Seconds per validator.")
    ] = 2.0
    transport: Annotated[Transport, typer.Option(
        "--transport",
        help="pipe (one server per environment over its stdin/stdout; the fastest) | http (one shared HTTP "
        "server per environment) | stdio (a process per episode) | memory (in process, trusted code only).",
    )] = "pipe"
    episode_process: Annotated[EpisodeProcess, typer.Option(
        "--episode-process",
        help="fork (every episode in a process of its own: one episode's environment code cannot reach "
        "another's state or the admin token) | shared (a server's episodes in one process) | auto (fork "
        "unless the environment is hand-authored). memory always shares.",
    )] = "auto"
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default runs/<run id>).")] = None
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --out.")] = False
    retry_infra: Annotated[
        bool, typer.Option("--retry-infra", help="With --resume: also re-run the infra-error episodes.")
    ] = False
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True
    workers: Annotated[str, typer.Option(
        "--workers", metavar="N|auto",
        help="Worker processes the episodes are spread over, each with its own servers and validator sandbox "
        "(--concurrency is their total). auto: one per CPU for an oracle or mock run big enough to repay their "
        "start-up and of small scenarios, else 1 (docs/eval.md).",
    )] = "auto"
    ray: Annotated[str | None, typer.Option(
        "--ray",
        help="Run the episodes on a Ray cluster: auto (the running one), local (a private one here) or an "
        "address; --concurrency is then per worker. Needs the package's [ray] extra (docs/ray.md).",
    )] = None
    ray_workers: Annotated[
        int | None, typer.Option("--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")
    ] = None
    max_infra: Annotated[float, typer.Option(
        "--max-infra", min=0.0, max=1.0,
        help="Exit with code 3 when more than this share of episodes ended in infrastructure errors "
        "(their scores are missing, so the run's numbers cover less than was asked).",
    )] = 0.1
    success: Annotated[SuccessRule, typer.Option(
        "--success",
        help="The verdicts an episode must not fail, joined by '+': checklist (every item passes), state "
        "(the final state matches the reference solution's, free fields aside), observation (the agent's "
        "calls returned what the reference's read-only calls did); 'state' or 'observation' alone must pass. "
        "'both' = checklist+state. The episode must also have completed.",
    )] = "checklist+state+observation"
    observation: Annotated[ObservationMode, typer.Option(
        "--observation",
        help="The observation check: auto (where the reference solution calls a tool the server marks "
        "read-only), on (also where the server marks none: every reference result), off.",
    )] = "auto"
    server_timeout: Annotated[float, typer.Option(
        "--server-timeout", min=0.1, help="Seconds a server may stay silent before it counts as hung.",
    )] = 60.0
    max_shown_result: Annotated[int, typer.Option(
        "--max-shown-result", min=100, help="Characters of a tool result shown to the agent; longer ones are cut "
        "with a marker (the full length is recorded).",
    )] = 50_000
    max_tool_result: Annotated[int, typer.Option(
        "--max-tool-result", min=100, help="Characters of a tool result beyond which the environment is at "
        "fault: the episode is infra_error with the reason.",
    )] = 5_000_000
    max_state: Annotated[int, typer.Option(
        "--max-state", min=100, help="Bytes of a final state's JSON beyond which the environment is at fault: "
        "the episode is infra_error with the reason.",
    )] = 5_000_000
    max_answer: Annotated[int, typer.Option(
        "--max-answer", min=100, help="Characters of the agent's answer; a longer one is the model's fault "
        "(model_error answer_too_long), scored cut to this length.",
    )] = 50_000
    max_transcript: Annotated[int, typer.Option(
        "--max-transcript", min=1_000, help="Characters of message text stored per episode in results.jsonl; "
        "over it each message is cut to an equal share.",
    )] = 2_000_000
    home: HomeOption = None

    def run_config(self) -> RunConfig:
        """The run's configuration (run.json), after the checks the options' types cannot make; a
        contradiction is a UsageError (one line, exit 2)."""
        from envscaler_mcp.harness.config import RunConfig
        from envscaler_mcp.harness.limits import OutputLimits
        from envscaler_mcp.harness.models import EpisodeConfig
        from envscaler_mcp.providers.base import GenerationSettings

        if not self.agent:
            raise UsageError("say which agent to evaluate: --agent PROVIDER/MODEL (or 'oracle' to check the setup)")
        mode = ("conversation" if self.user else "task") if self.mode == "auto" else self.mode
        if mode == "conversation" and not self.user:
            raise UsageError("--mode conversation needs a simulated user: pass --user PROVIDER/MODEL")
        if self.resume and self.out is None:
            raise UsageError("--resume needs --out RUN_DIR (the folder of the run to continue)")
        try:
            parse_workers(self.workers)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if self.ray is not None and self.workers.strip().lower() != "auto":
            raise UsageError("--workers spreads a run over this machine's processes; with --ray use --ray-workers")
        user = self.user if mode == "conversation" else None  # a user given in task mode is not seated
        return RunConfig(
            envs=_split_ids(self.env) or [], all_envs=self.all_envs,
            scenarios_file=str(self.scenarios) if self.scenarios else None,
            scenario_ids=_split_ids(self.scenario_ids), limit=self.limit, server_cmd=self.server, url=self.url,
            agent=self.agent, agent_base_url=self.agent_base_url,
            user=user, trials=self.trials, concurrency=self.concurrency,  # None: the seats' default (RunConfig)
            transport=self.transport,
            episode_process=self.episode_process, validator_timeout_s=self.validator_timeout,
            episode=EpisodeConfig(
                mode=mode, max_steps=self.max_steps, timeout_s=self.timeout, infra_retries=self.infra_retries,
                server_timeout_s=self.server_timeout, success=self.success, observation=self.observation,
                agent_settings=GenerationSettings(temperature=self.temperature, max_tokens=4096),
                limits=OutputLimits(shown_result_chars=self.max_shown_result, tool_result_chars=self.max_tool_result,
                                    state_bytes=self.max_state, answer_chars=self.max_answer,
                                    transcript_chars=self.max_transcript),
            ),
            progress=self.progress, ray=self.ray, ray_workers=self.ray_workers,
        )


def _split_ids(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for v in values for part in v.split(",") if part.strip()]
