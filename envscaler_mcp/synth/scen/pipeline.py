"""Run ScenGenerator over environments: per item, initial state -> scenario -> gate; then dedupe and merge.

Each environment gets one launched server (all its episodes) and the run shares one validator sandbox.
Items are numbered s001 … sN per environment; a finished item (kept or dropped) is on disk at once, so a
rerun with --resume skips it and a crash loses only the items in flight.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from envscaler_mcp._choices import MutationGuard, PlanFirst
from envscaler_mcp._json import State
from envscaler_mcp._usage import Usage
from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.skeleton.models import EnvSkeleton, Provenance
from envscaler_mcp.synth._common_progress import RunLog, item_scope
from envscaler_mcp.synth._common_store import ItemCallback, run_bounded
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.build import Dropped, ScenarioBuilder, draft_scenario
from envscaler_mcp.synth.scen.feasible import Judgement, closed_reason, judge_state, known_for
from envscaler_mcp.synth.scen.plan_first import plan_first_item
from envscaler_mcp.synth.scen.records import Draft, DroppedRecord, ItemRecord, StateRecord
from envscaler_mcp.synth.scen.reopen import reopen_state
from envscaler_mcp.synth.scen.state_step import Checked, gen_state, load_state
from envscaler_mcp.synth.scen.steps import StepContext, prompt_version
from envscaler_mcp.synth.scen.store import DEFAULT_SIMILARITY, EnvWork, MergeResult, merge
from envscaler_mcp.synth.scen.summary import ScenSummary, collect_summary

ServerOpener = Callable[[EnvSkeleton], AbstractAsyncContextManager[LaunchedServer]]


def http_server(skeleton: EnvSkeleton) -> AbstractAsyncContextManager[LaunchedServer]:
    """The default: render the skeleton and start it as one HTTP server (episodes through its admin API)."""
    from envscaler_mcp.launch import launch_server

    return launch_server(skeleton, transport="http")


@dataclass
class ScenOptions:
    """Settings of one `synth scenarios` run."""

    n: int = 5
    out: Path = Path("scenarios")
    resume: bool = False
    concurrency: int = 2
    retries: int = 2
    temperature: float = 0.7
    similarity: float = DEFAULT_SIMILARITY
    require_mutation: bool = True
    guard: MutationGuard = "validators"  # who must catch each mutation probe (build.py)
    validator_timeout_s: float = 2.0
    validator_workers: int = 1
    questions: float = 0.0  # share of items that are read-only questions (checked on the transcript)
    judge: bool = False  # ask the generator model whether each passing solution does exactly what its task asks
    ray: str | None = None  # build the items on this Ray cluster ('auto', 'local', HOST:PORT)
    ray_workers: int | None = None  # Ray actors (default: the cluster's CPUs)
    steer: bool = True  # tasks about chosen records, checklists kept across retries, refused plans corrected
    plan_first: PlanFirst = "off"  # plan-first items (plan_first.py): after a drop, before, or not (the command line: fallback)
    on_item: ItemCallback | None = None  # (env id, item id, outcome) when an item is kept or dropped


Providers = tuple[Provider, Provider | None]  # generator, solver (None: the generator)


@dataclass
class ScenJob:
    """Scenario items on a Ray worker (adapters.ray_items): one server per environment and one validator sandbox
    per worker, kept open for all its items."""

    skeletons: dict[str, EnvSkeleton]
    make_providers: Callable[[], Providers]
    options: ScenOptions
    open_server: ServerOpener = http_server
    state: dict[str, Any] = field(default_factory=dict)

    async def open(self, resources: Any) -> None:
        self.state["resources"] = resources
        self.state["providers"] = self.make_providers()
        self.state["sandbox"] = await resources.get("sandbox", lambda: ValidatorSandbox(
            timeout_s=self.options.validator_timeout_s, workers=self.options.validator_workers))

    async def run(self, out: Path, on_item: ItemCallback, item: tuple[str, int, dict[str, Any] | None]) -> None:
        env_id, index, state = item
        skeleton = self.skeletons[env_id]
        if state is not None:  # the item's initial state, finished in an earlier run: not generated again
            path = EnvWork(out, env_id).states.path(f"s{index + 1:03d}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(state), encoding="utf-8")
        server = await self.state["resources"].get(f"server:{env_id}", lambda: self.open_server(skeleton))
        generator, solver = self.state["providers"]
        ctx = StepContext(skeleton=skeleton, generator=generator, solver=solver or generator,
                          retries=self.options.retries, temperature=self.options.temperature,
                          steer=self.options.steer)
        await EnvRun(skeleton, ctx, server, self.state["sandbox"], replace(self.options, out=out, on_item=on_item)
                     ).item(index)

    async def close(self) -> None:
        generator, solver = self.state.get("providers", (None, None))
        for provider in (generator, solver):
            if provider is not None:
                await provider.aclose()


def is_question(index: int, share: float) -> bool:
    """Whether item `index` is a question: a `share` of the items, spread evenly (0.25: every fourth)."""
    return int((index + 1) * share) > int(index * share)


def item_ids(n: int) -> list[str]:
    """s001, s002, … (stable, so a rerun with a larger N only tops up)."""
    return [f"s{i:03d}" for i in range(1, n + 1)]


def _usage_dict(meter: UsageMeter) -> dict[str, Usage]:
    return dict(meter.by_seat)


class EnvRun:
    """One environment's items against its launched server."""

    def __init__(self, skeleton: EnvSkeleton, ctx: StepContext, server: LaunchedServer, sandbox: ValidatorSandbox,
                 options: ScenOptions) -> None:
        self.skeleton = skeleton
        self.ctx = ctx
        self.server = server
        self.options = options
        self.work = EnvWork(options.out, skeleton.id)
        self.builder = ScenarioBuilder(ctx, server.episode, sandbox, require_mutation=options.require_mutation,
                                       judge=options.judge,
                                       validators_only=options.guard == "validators")
        self.total = options.n
        self.known = known_for(ctx, scenarios_for(skeleton.id))  # calls to probe a generated state with
        self.changers = {t.name for t in skeleton.tools if t.kind == "state_change"}

    def drop(self, item_id: str, step: str, reason: str, usage: dict[str, Usage]) -> None:
        """Record an item as given up."""
        self.work.dropped.add(DroppedRecord(item_id=item_id, step=step, reason=reason, usage=usage)
                              .model_dump(mode="json"))
        self.report(item_id, f"dropped at {step}: {reason[:160]}")

    def report(self, item_id: str, outcome: str) -> None:
        if self.options.on_item is not None:
            self.options.on_item(self.skeleton.id, item_id, outcome)

    async def state_for(self, item_id: str, index: int) -> StateRecord | None:
        """The item's initial state: from disk, or generated, schema-checked and loaded into the server."""
        if self.work.states.done(item_id):
            return StateRecord.model_validate(self.work.states.read(item_id))
        meter = UsageMeter()
        mends: list[str] = []
        try:
            state = await gen_state(self.ctx, index, self.total, meter,
                                    lambda state: self.leaves_work(item_id, state), mends)
        except StepFailed as exc:
            self.drop(item_id, "states", exc.reason, _usage_dict(meter))
            return None
        problem = await load_state(self.server, state)
        if problem:
            self.drop(item_id, "states", problem, _usage_dict(meter))
            return None
        if mends:
            self.line(f"  {item_id} states: state mended: {'; '.join(mends)}")
        record = StateRecord(item_id=item_id, state=state, repaired=meter.total.calls > 1, mends=mends,
                             usage=meter.total)
        self.work.states.write(item_id, record.model_dump(mode="json"))
        return record

    def line(self, text: str) -> None:
        """A line of the run's progress log (synth/_common_progress.py), not an item's outcome (that counts
        items)."""
        log = getattr(self.ctx.generator, "log", None)
        if isinstance(log, RunLog):
            log.line(text)

    async def leaves_work(self, item_id: str, state: State) -> Checked:
        """Why `state` leaves no work to do ("" when it does; feasible.py: probed on the real server), and the
        collections to write again (the closed ones); or the state with some closed records reopened, when that
        makes it workable (reopen.py)."""
        judged = await self.judge(state)
        if not judged.refused:
            return Checked()
        if (mended := await reopen_state(self.skeleton, state, judged, self.judge)) is not None:
            return Checked(mended=mended[0], mends=mended[1])  # reopen.py: mended by code, not asked again
        self.line(f"  {item_id} states: refused, {', '.join(c.collection for c in judged.closed)} allow no "
                  "change; asking again")
        return Checked(closed_reason(judged, state), [c.collection for c in judged.closed])

    async def judge(self, state: State) -> Judgement:
        """Which collections of `state` allow no change (feasible.py: probed on the real server)."""
        return await judge_state(state, self.known, self.changers, self.server.episode)

    async def item(self, index: int) -> None:
        """Make (or skip) item number `index`."""
        item_id = f"s{index + 1:03d}"
        if self.work.finished(item_id):
            return
        with item_scope(item_id):
            await self._make(item_id, index)

    async def _make(self, item_id: str, index: int) -> None:
        record = await self.state_for(item_id, index)
        if record is None:
            return
        meter = UsageMeter()
        try:
            draft = await self.drafted(item_id, record.state, meter, index)
        except Dropped as final:
            self.drop(item_id, final.step, final.reason, _usage_dict(meter))
            return
        notes = list(draft.notes) + (["initial state repaired after a schema error"] if record.repaired else [])
        notes += [f"initial state mended: {mend}" for mend in record.mends]
        proven = self.ctx.proven()
        if proven is not None and len(proven) < len(self.skeleton.tools):
            notes.append("planned with the tools the environment's check saw succeed: " + ", ".join(proven))
        if self.options.require_mutation and self.options.guard == "state":
            notes.append("gated as the catalog is (--guard state): a mutation probe counts as caught when the "
                         "validators or the state check catch it")
        provenance = Provenance(
            source="synthesized", source_id=f"{self.skeleton.id}/{item_id}",
            models={"generator": self.ctx.generator.spec, "solver": self.ctx.solver.spec},
            prompt_version=prompt_version(), usage=record.usage + meter.total,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"), notes=notes)
        scenario = draft_scenario(self.skeleton.id, record.state, draft, provenance)
        self.work.items.write(item_id, ItemRecord(item_id=item_id, scenario=scenario, usage=_usage_dict(meter))
                              .model_dump(mode="json"))
        spared = next((n for n in draft.notes if n.startswith("checklist item(s) ") and " dropped at the " in n), "")
        self.report(item_id, f"passed the gate ({len(scenario.checklist)} checks)"
                    + (f"; {spared.split(':')[0]}" if draft.spared is not None and spared else ""))

    async def drafted(self, item_id: str, state: State, meter: UsageMeter, index: int) -> Draft:
        """The item's draft, made model-first and/or plan-first as `plan_first` says (plan_first.py), or Dropped."""
        question = is_question(index, self.options.questions)
        mode = self.options.plan_first if self.ctx.steer and not question else "off"
        first: Dropped | None = None
        if mode == "first":
            try:
                return await plan_first_item(self.builder, state, self.known, self.changers, meter, index)
            except Dropped as exc:
                first = exc
                self.line(f"  {item_id} plan-first: {exc.reason[:200]}; making it model-first")
        try:
            return await self.builder.build(state, meter, question, index)
        except Dropped as exc:
            if first is not None:
                raise Dropped(exc.step, f"{exc.reason} (plan-first, tried first: {first.reason[:300]})") from exc
            if mode != "fallback":
                raise
            self.line(f"  {item_id} dropped at {exc.step}: {exc.reason[:200]}; making it plan-first")
            return await plan_first_item(self.builder, state, self.known, self.changers, meter, index, exc)

    async def run(self) -> MergeResult:
        """Every item of this environment, then de-duplication and the merge into OUT/<env>.jsonl."""
        await run_bounded(range(self.options.n), self.item, concurrency=self.options.concurrency)
        return merge(self.work, self.options.similarity)


async def _run_on_ray(skeletons: Sequence[EnvSkeleton], options: ScenOptions, open_server: ServerOpener,
                      make_providers: Callable[[], Providers]) -> dict[str, MergeResult]:
    """Every unfinished item of every environment on Ray; the driver writes them, then merges each set."""
    from envscaler_mcp.adapters.ray_items import run_items
    from envscaler_mcp.adapters.ray_run import connect

    assert options.ray is not None
    connect(options.ray)

    items: list[tuple[str, int, dict[str, Any] | None]] = []
    for skeleton in skeletons:
        work = EnvWork(options.out, skeleton.id)
        for index, item_id in enumerate(item_ids(options.n)):
            if not work.finished(item_id):
                items.append((skeleton.id, index, work.states.read(item_id) if work.states.done(item_id) else None))
    job = ScenJob({sk.id: sk for sk in skeletons}, make_providers, replace(options, on_item=None), open_server)
    await run_items(job, items, options.out, options.ray, workers=options.ray_workers,
                    per_worker=options.concurrency, on_item=options.on_item)
    return {sk.id: merge(EnvWork(options.out, sk.id), options.similarity) for sk in skeletons}


async def run_scenarios(skeletons: Sequence[EnvSkeleton], generator: Provider, solver: Provider | None,
                        options: ScenOptions, open_server: ServerOpener = http_server,
                        make_providers: Callable[[], Providers] | None = None,
                        on_start: Callable[[int], None] | None = None) -> ScenSummary:
    """Generate scenarios for each environment in turn; returns the totals (also in OUT/_work/summary.json).
    With options.ray the items run on Ray workers, each building its providers with `make_providers`.
    `on_start(number of items to make)` is called once the run is known to go ahead."""
    if not options.resume:
        busy = [sk.id for sk in skeletons if EnvWork(options.out, sk.id).has_work()]
        if busy:
            raise UsageError(f"{options.out / '_work'} already holds work for {', '.join(busy)}; pass --resume to "
                             "continue it (finished items are skipped) or choose another --out")
    if on_start is not None:
        works = [EnvWork(options.out, sk.id) for sk in skeletons]
        on_start(sum(not w.finished(item_id) for w in works for item_id in item_ids(options.n)))
    if options.ray:
        if make_providers is None:
            raise UsageError("a Ray run needs make_providers: the worker builds its own providers")
        merges_on_ray = await _run_on_ray(skeletons, options, open_server, make_providers)
        return collect_summary(options.out, [sk.id for sk in skeletons], merges_on_ray)
    solver = solver or generator
    merges: dict[str, MergeResult] = {}
    sandbox = ValidatorSandbox(timeout_s=options.validator_timeout_s, workers=options.validator_workers)
    async with sandbox:
        for skeleton in skeletons:
            ctx = StepContext(skeleton=skeleton, generator=generator, solver=solver, retries=options.retries,
                              temperature=options.temperature, steer=options.steer)
            work = EnvWork(options.out, skeleton.id)
            if all(work.finished(item_id) for item_id in item_ids(options.n)):
                merges[skeleton.id] = merge(work, options.similarity)  # nothing to build: no server
                continue
            async with open_server(skeleton) as server:
                merges[skeleton.id] = await EnvRun(skeleton, ctx, server, sandbox, options).run()
    return collect_summary(options.out, [sk.id for sk in skeletons], merges)
