"""The options of `synth scenarios`, declared once: a typed dataclass whose fields are the command's arguments
and options (typer reads them through envscaler_mcp/_command.py), and the one place they are checked and
turned into the pipeline's ScenOptions.

Typing and typer only at import time: `synth scenarios --help` and a bad choice load no pipeline (the guard's
choices are envscaler_mcp/_choices.py's MutationGuard, which the pipeline uses too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from envscaler_mcp._choices import MutationGuard, PlanFirst, PlanFirstOption
from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError
from envscaler_mcp.synth.skel.cli_options import RAY_HELP

if TYPE_CHECKING:
    from envscaler_mcp.synth._common_store import ItemCallback
    from envscaler_mcp.synth.scen.pipeline import ScenOptions


@dataclasses.dataclass(frozen=True)
class ScenariosOptions:
    """What `synth scenarios` was given: one field per argument or option, in the order `--help` lists them."""

    envs: Annotated[list[str] | None, typer.Argument(
        help="Environment ids (bundled or imported) or skeleton.json paths.", show_default=False)] = None
    all_envs: Annotated[bool, typer.Option("--all", help="Every environment of the bundled catalog.")] = False
    n: Annotated[int, typer.Option(
        "-n", "--n", min=1, help="Initial states (one scenario each) per environment.")] = 5
    model: Annotated[str, typer.Option(
        "--model", help="Generator model, provider/model (e.g. openai/gpt-4.1).")] = ""
    solver_model: Annotated[str | None, typer.Option(
        "--solver-model", help="Model that plans the reference solutions (default: --model).")] = None
    out: Annotated[Path, typer.Option("--out", help="Folder of the scenario sets (OUT/<env>.jsonl, work in "
                                      "OUT/_work/).")] = Path("scenarios")
    resume: Annotated[bool, typer.Option("--resume", help="Continue earlier work in OUT/_work, skipping finished "
                                         "items.")] = False
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items built at the same time.")] = 2
    retries: Annotated[int, typer.Option(
        "--retries", min=0, help="Re-asks after an unparsable answer, per step.")] = 2
    similarity: Annotated[float, typer.Option(
        "--similarity", min=0.0, max=1.0, help="Lexical (TF-IDF cosine) similarity at which two tasks of one "
        "environment are duplicates.")] = 0.5
    mutation: Annotated[bool, typer.Option(
        "--mutation/--no-mutation", help="Require every changed field to be guarded by a validator.")] = True
    guard: Annotated[MutationGuard, typer.Option(
        "--guard", help="Who must catch each mutation probe: 'validators' (the checklist alone, the default) or "
        "'state' (the validators or the state check, as `scenarios check --mutation` gates the catalog).")
    ] = "validators"
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, max=2.0,
                                               help="Temperature of the state and task steps.")] = 0.7
    questions: Annotated[float, typer.Option(
        "--questions", min=0.0, max=1.0, help="Share of items that are read-only questions, checked on what the "
        "agent looks up and answers (transcript checks) instead of on the final state.")] = 0.0
    judge: Annotated[bool, typer.Option(
        "--judge", help="Ask the model, for each scenario that passed the gate, whether its reference solution does "
        "exactly what its task asks and nothing else; a no drops the scenario, a yes is noted in its provenance.")
    ] = False
    steer: Annotated[bool, typer.Option(
        "--steer/--no-steer", help="Ask each task about records chosen from its initial state, keep a checklist's "
        "usable items across retries (asking only for replacements), and correct a reference plan whose call the "
        "environment refuses, shown the refusal and the records it names (--no-steer: the prompts of earlier "
        "versions, e.g. to replay a response cache made with them).")] = True
    plan_first: Annotated[PlanFirstOption, typer.Option(
        "--plan-first", help="Make items plan-first too (steered runs only): a plan of calls known to succeed, "
        "accepted by the environment on the item's state, its checklist and validators written by code from the "
        "plan's changes, only the task worded by the model; gated like any item, its provenance says so. "
        "'fallback': when the usual item is dropped; 'first': before it, the usual path then the fallback; "
        "'off'; 'auto' (the default): 'first' on the embedded model (local/…), whose usual items take 15-40 "
        "minutes and are mostly dropped, else 'fallback'.")] = "auto"
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Cache model responses here (a rerun with the same prompts costs nothing).")] = None
    home: HomeOption = None
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP + " Each worker runs its own server per "
                                            "environment and its own validator sandbox.")] = None
    ray_workers: Annotated[int | None, typer.Option(
        "--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")] = None

    def env_names(self) -> list[str]:
        """The environments to synthesize scenarios for (the named ones, then with --all the rest of the
        catalog), after the checks the options' types cannot make: a missing one is a UsageError."""
        from envscaler_mcp.catalog.store import list_env_ids

        if not self.model:
            raise UsageError("--model is required (provider/model, e.g. openai/gpt-4.1; see `envscaler-mcp models`)")
        names = list(self.envs or [])
        if self.all_envs:
            names += [e for e in list_env_ids() if e not in names]
        if not names:
            raise UsageError("name at least one environment (id or skeleton path), or pass --all")
        return names

    def plan_first_mode(self) -> PlanFirst:
        """--plan-first with `auto` resolved: `first` on the embedded model, else `fallback`."""
        if self.plan_first != "auto":
            return self.plan_first
        return "first" if self.model.startswith("local/") else "fallback"

    def scen_options(self, on_item: ItemCallback | None = None) -> ScenOptions:
        """The pipeline's settings; `on_item` hears of each item kept or dropped."""
        from envscaler_mcp.synth.scen.pipeline import ScenOptions

        return ScenOptions(n=self.n, out=self.out, resume=self.resume, concurrency=self.concurrency,
                           retries=self.retries, similarity=self.similarity, require_mutation=self.mutation,
                           guard=self.guard, temperature=self.temperature,
                           validator_workers=min(2, self.concurrency), questions=self.questions, judge=self.judge,
                           ray=self.ray, ray_workers=self.ray_workers, on_item=on_item, steer=self.steer,
                           plan_first=self.plan_first_mode())
