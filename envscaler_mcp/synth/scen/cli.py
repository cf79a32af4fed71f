"""`envscaler-mcp synth scenarios`: generate gated scenario sets for environments."""

from __future__ import annotations

import importlib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from envscaler_mcp import _interrupt
from envscaler_mcp._io import check_writable_folder
from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth._common_report import existing, fail_empty, read_drops, resume_command
from envscaler_mcp.synth.skel.cli import RAY_HELP

if TYPE_CHECKING:
    from envscaler_mcp.synth.scen.pipeline import Providers

Guard = Literal["validators", "state"]  # ScenOptions.guard, spelled here so that --help loads no pipeline


def make_providers(model: str, solver_model: str | None, cache_dir: Path | None = None) -> Providers:
    """Generator and solver from their specs (on the driver, and again on each Ray worker)."""
    get_provider = importlib.import_module("envscaler_mcp.providers").get_provider  # the provider registry
    return (get_provider(model, cache_dir=cache_dir),
            get_provider(solver_model, cache_dir=cache_dir) if solver_model else None)


def scenarios(
    envs: Annotated[list[str] | None, typer.Argument(
        help="Environment ids (bundled or imported) or skeleton.json paths.", show_default=False)] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Every environment of the bundled catalog.")] = False,
    n: Annotated[int, typer.Option(
        "-n", "--n", min=1, help="Initial states (one scenario each) per environment.")] = 5,
    model: Annotated[str, typer.Option(
        "--model", help="Generator model, provider/model (e.g. openai/gpt-4.1).")] = "",
    solver_model: Annotated[str | None, typer.Option(
        "--solver-model", help="Model that plans the reference solutions (default: --model).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder of the scenario sets (OUT/<env>.jsonl, work in "
                                      "OUT/_work/).")] = Path("scenarios"),
    resume: Annotated[bool, typer.Option("--resume", help="Continue earlier work in OUT/_work, skipping finished "
                                         "items.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items built at the same time.")] = 2,
    retries: Annotated[int, typer.Option(
        "--retries", min=0, help="Re-asks after an unparsable answer, per step.")] = 2,
    similarity: Annotated[float, typer.Option(
        "--similarity", min=0.0, max=1.0, help="Lexical (TF-IDF cosine) similarity at which two tasks of one "
        "environment are duplicates.")] = 0.5,
    mutation: Annotated[bool, typer.Option(
        "--mutation/--no-mutation", help="Require every changed field to be guarded by a validator.")] = True,
    guard: Annotated[Guard, typer.Option(
        "--guard", help="Who must catch each mutation probe: 'validators' (the checklist alone, the default) or "
        "'state' (the validators or the state check, as `scenarios check --mutation` gates the catalog).")
    ] = "validators",
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, max=2.0,
                                               help="Temperature of the state and task steps.")] = 0.7,
    questions: Annotated[float, typer.Option(
        "--questions", min=0.0, max=1.0, help="Share of items that are read-only questions, checked on what the "
        "agent looks up and answers (transcript checks) instead of on the final state.")] = 0.0,
    judge: Annotated[bool, typer.Option(
        "--judge", help="Ask the model, for each scenario that passed the gate, whether its reference solution does "
        "exactly what its task asks and nothing else; a no drops the scenario, a yes is noted in its provenance.")
    ] = False,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Cache model responses here (a rerun with the same prompts costs nothing).")] = None,
    home: HomeOption = None,
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP + " Each worker runs its own server per "
                                            "environment and its own validator sandbox.")] = None,
    ray_workers: Annotated[int | None, typer.Option(
        "--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")] = None,
) -> None:
    """Generate scenarios (state, task, checklist, validators, reference solution) that pass the QA gate."""
    from envscaler_mcp.catalog.store import get_skeleton, list_env_ids
    from envscaler_mcp.synth.scen.pipeline import ScenOptions, run_scenarios
    from envscaler_mcp.synth.scen.store import EnvWork
    from envscaler_mcp.synth.scen.summary import ScenSummary, print_summary

    if not model:
        raise UsageError("--model is required (provider/model, e.g. openai/gpt-4.1; see `envscaler-mcp models`)")
    names = list(envs or [])
    if all_envs:
        names += [e for e in list_env_ids() if e not in names]
    if not names:
        raise UsageError("name at least one environment (id or skeleton path), or pass --all")
    skeletons = [get_skeleton(name) for name in names]
    check_writable_folder(out)  # before any model starts
    log = RunLog(out / "_work" / "synth.log")
    options = ScenOptions(n=n, out=out, resume=resume, concurrency=concurrency, retries=retries,
                          similarity=similarity, require_mutation=mutation, guard=guard, temperature=temperature,
                          validator_workers=min(2, concurrency), questions=questions, judge=judge, ray=ray,
                          ray_workers=ray_workers,
                          on_item=lambda env_id, item_id, outcome: log.item("scenarios", f"{env_id}/{item_id}", outcome))
    generator, solver = make_providers(model, solver_model, cache_dir)
    generator = ReportingProvider(generator, log)
    solver = ReportingProvider(solver, log) if solver is not None else None

    async def main() -> ScenSummary:
        try:
            return await run_scenarios(skeletons, generator, solver, options,
                                       make_providers=partial(make_providers, model, solver_model, cache_dir),
                                       on_start=lambda todo: log.expect("scenarios", todo))
        finally:
            await generator.aclose()
            if solver is not None:
                await solver.aclose()

    try:
        summary = _interrupt.run(main)
    except KeyboardInterrupt:
        say_interrupted(out, [sk.id for sk in skeletons], n, log)
        raise typer.Exit(130) from None
    print_summary(summary)
    works = [EnvWork(out, sk.id) for sk in skeletons]
    added = [f"{w.scenario_file} (+{env.added})" for w, env in zip(works, summary.environments, strict=True)
             if env.added and w.scenario_file.exists()]
    dropped = existing(w.dropped.path for w in works)
    if added:
        typer.echo(f"scenarios added to: {', '.join(added)}")
    if dropped:
        typer.echo(f"dropped items: {', '.join(map(str, dropped))}")
    typer.echo(f"log: {log.path}")
    if not any(env.kept for env in summary.environments):
        fail_empty("no scenario kept", [d for w in works for d in read_drops(w.dropped.path)], log)


def say_interrupted(out: Path, env_ids: list[str], n: int, log: RunLog) -> None:
    """Two lines: what the interrupted run kept (on disk in OUT/_work) and the command that continues it."""
    from envscaler_mcp.synth.scen.store import EnvWork

    works = [EnvWork(out, env_id) for env_id in env_ids]
    kept = sum(len(w.kept()) for w in works)
    dropped = sum(len(w.dropped.records) for w in works)
    log.line(f"interrupted: {kept} scenario(s) passed the gate and {dropped} item(s) were dropped, of "
             f"{n * len(works)}; kept in {out / '_work'} (a resumed run adds them to the sets)")
    log.line(f"resume: {resume_command()}")


def register(app: typer.Typer) -> None:
    """Add `scenarios` to the synth command group."""
    app.command("scenarios")(scenarios)
