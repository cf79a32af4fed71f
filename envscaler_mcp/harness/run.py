"""A run: every (scenario, trial) episode of the plan, concurrently, written to RUN_DIR as it finishes."""

from __future__ import annotations

import gc
import os
import traceback
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol

import anyio
from rich.console import Console

from envscaler_mcp._allocator import give_back_large_buffers, trim
from envscaler_mcp._io import atomic_write_text
from envscaler_mcp.catalog.inflight import LineBudget, is_large_line
from envscaler_mcp.errors import EnvScalerError, HarnessError, UsageError
from envscaler_mcp.harness.checks import Checker, SandboxChecker
from envscaler_mcp.harness.config import EnvPlan, RunConfig, RunManifest, build_plan, versions
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.external import external_source, external_warning
from envscaler_mcp.harness.faults import describe
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.pool import PooledSource, SourcePool, open_pool
from envscaler_mcp.harness.progress import RunProgress
from envscaler_mcp.harness.rundir import ERROR_LOG, RunDir, check_resumable
from envscaler_mcp.harness.seats import Seat, seat_for
from envscaler_mcp.harness.source import EpisodeSource, has_admin_plane
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.references.reference import Reference, ReferenceCache
from envscaler_mcp.references.store import ReferenceStore
from envscaler_mcp.scenario.models import Scenario

SourceFactory = Callable[[EnvPlan, RunConfig], AbstractAsyncContextManager[EpisodeSource]]
Finished = Callable[[EpisodeResult, dict[str, IsolationReport]], None]

_GC_YOUNG = 20_000  # allocations between collections of the youngest generation during a run


class RemoteEpisodes(Protocol):
    """Runs a run's episodes elsewhere (adapters/ray_run.py RayEpisodes: Ray actors, `eval --ray`;
    adapters/local_run.py LocalEpisodes: local worker processes, `eval --workers N`). Only this
    process writes the run folder: `finished` gets each result with the isolation in force where it ran."""

    def connect(self, config: RunConfig) -> None:
        """Refuse what cannot run remotely and reach the workers, before any progress is shown."""

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Callable[[str], None]) -> None:
        """Run the (env id, scenario id, trial) items; return when every one has finished."""


def new_run_id() -> str:
    """A run id from the current UTC time."""
    return "run-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


@asynccontextmanager
async def open_source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[EpisodeSource]:
    """The episode source of one environment: an external server, or a launched one (http: one shared
    process; stdio: one process per episode; memory: in process)."""
    if config.server_cmd or config.url:
        async with external_source(command=config.server_cmd, url=config.url) as source:
            yield source
        return
    from envscaler_mcp.launch import launch_server

    # Rendered without scenarios: every episode is opened at its scenario's state, handed over as a state file
    # (launch/servers.py), so the server copy holds no initial states.
    async with launch_server(
        plan.target or plan.env_id,
        transport=config.transport,
        scenarios=(),
        client_timeout=config.episode.server_timeout_s,
        episode_process=config.episode_process,
    ) as server:
        yield server


def _manifest(config: RunConfig, plans: list[EnvPlan], run_id: str) -> RunManifest:
    return RunManifest(
        run_id=run_id,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        config=config,
        versions=versions(),
        hashes={p.env_id: p.hashes for p in plans},
        scenario_ids={p.env_id: p.scenario_ids() for p in plans},
    )


async def run_eval(
    config: RunConfig,
    out: Path,
    *,
    resume: bool = False,
    retry_infra: bool = False,
    plans: list[EnvPlan] | None = None,
    agent: Seat | None = None,
    user: Seat | None = None,
    checker: Checker | None = None,
    source_factory: SourceFactory = open_source,
    console: Console | None = None,
    remote: RemoteEpisodes | None = None,
    on_result: Callable[[EpisodeResult], None] | None = None,
) -> RunDir:
    """Run (or resume) an evaluation into `out` and return the run folder (run.json, results.jsonl).

    Each finished episode is appended to results.jsonl and fsync'd before the next is counted, so an
    interrupted run loses only the episodes in flight; `resume=True` runs exactly the missing pairs, and
    with `retry_infra` also the pairs recorded as infra errors (their old records are dropped first).
    The summary (summary.json, the table) and the HTML report are the report stage's: `report.finish_run`.
    `on_result` is given each finished episode's record as it is appended, in the file's order (the report
    stage builds the page as the run goes: report/live.py); what it raises stops the run.
    A run with `config.ray` runs its episodes on `remote` (adapters/ray_run.py RayEpisodes), one with
    `config.workers` > 1 on local worker processes (adapters/local_run.py LocalEpisodes).
    """
    console = console or Console(stderr=True)
    if config.ray and remote is None:
        raise UsageError("a Ray run needs its remote runner: remote=RayEpisodes() (envscaler_mcp.adapters.ray_run)")
    if config.workers > 1 and remote is None:
        raise UsageError("a run on worker processes needs its runner: remote=LocalEpisodes(workers) "
                         "(envscaler_mcp.adapters.local_run)")
    plans = plans if plans is not None else build_plan(config)
    if config.episode.mode == "conversation" and not config.user and user is None:
        raise UsageError("conversation mode needs a simulated user: pass --user PROVIDER/MODEL")
    # Seats are set up before any file is written or server started: a missing key or an unknown provider
    # stops the command with one line, leaving nothing behind.
    agent = agent or seat_for(config.agent, role="agent", base_url=config.agent_base_url)
    if user is None and config.user and config.episode.mode == "conversation":
        user = seat_for(config.user, role="user")
    try:
        first = next((s for p in plans for s in p.headers()[:1]), None)  # one environment's headers read
        if first is not None:
            agent.prepare(first)
            if user is not None:
                user.prepare(first)
    except BaseException:
        await agent.aclose()
        raise
    try:
        return await _run_prepared(config, out, plans, agent, user, resume=resume, retry_infra=retry_infra,
                                   checker=checker, source_factory=source_factory, console=console,
                                   remote=remote if config.ray or config.workers > 1 else None,
                                   on_result=on_result or _ignore)
    finally:
        await agent.aclose()
        if user is not None:
            await user.aclose()


async def _run_prepared(
    config: RunConfig,
    out: Path,
    plans: list[EnvPlan],
    agent: Seat,
    user: Seat | None,
    *,
    resume: bool,
    retry_infra: bool,
    checker: Checker | None,
    source_factory: SourceFactory,
    console: Console,
    remote: RemoteEpisodes | None,
    on_result: Callable[[EpisodeResult], None],
) -> RunDir:
    run_dir = RunDir(out)
    manifest = _manifest(config, plans, new_run_id())
    done: set[tuple[str, int]] = set()
    if resume:
        old = run_dir.read_manifest()
        check_resumable(old, manifest)
        manifest = old
        records = run_dir.read_results(repair=True)
        if retry_infra:
            records = run_dir.drop_infra_errors(records)
        done = {(r.scenario_id, r.trial) for r in records}
    elif retry_infra:
        raise UsageError("--retry-infra goes with --resume: it re-runs a run's infra-error episodes")
    elif run_dir.has_results():
        raise UsageError(f"{out} already holds a run; pass --resume to continue it, or choose another --out")
    else:
        run_dir.write_manifest(manifest)
    # Per environment, its (scenario id, trial) pairs to run: counted now, listed when its turn comes.
    uses = Counter({p.env_id: n for p in plans if (n := len(_pending(p, config.trials, done)))})
    if config.server_cmd or config.url:
        console.print(f"[yellow]warning:[/] {external_warning(s for p in plans for s in p.headers())}",
                      highlight=False)
    planned = sum(p.count() for p in plans) * config.trials
    if remote is not None:
        todo = [(p.env_id, sid, t) for p in plans for sid, t in _pending(p, config.trials, done)]
        try:
            await _run_remote(remote, config, plans, todo, run_dir, manifest, planned, len(done), console,
                              on_result)
        except Exception as exc:  # a bug on a worker or here: error.log and one line, as a local run
            if isinstance(exc, EnvScalerError):
                raise
            raise _harness_bug(run_dir, manifest, exc) from exc
        return run_dir
    try:
        async with AsyncExitStack() as stack:
            if large_states(plans):
                give_back_large_buffers()  # _allocator.py: their texts unmapped when freed
            if checker is None and uses:
                workers = validator_workers(config.concurrency, plans)
                checker = await stack.enter_async_context(
                    SandboxChecker(timeout_s=config.validator_timeout_s, workers=workers)
                )
            needed = {plan.env_id: partial(source_factory, plan, config) for plan in plans if plan.env_id in uses}
            # each server stops after its environment's last episode
            pool = await stack.enter_async_context(open_pool(needed, uses))
            following = dict(zip(list(uses), list(uses)[1:], strict=False))  # environments in the order they run
            limiter = anyio.CapacityLimiter(config.concurrency)
            budget = LineBudget()  # and no more than a few megabytes of scenario lines in flight (catalog.inflight)
            references = ReferenceCache(store=ReferenceStore())
            results = run_dir.appender()
            progress = stack.enter_context(
                RunProgress(planned, done=len(done), enabled=config.progress, console=console)
            )

            trials_left: Counter[tuple[str, str]] = Counter()  # of the environments listed so far
            # Episodes are started in the plan's order, a few ahead of the limiter: an environment's scenarios are
            # read when its turn comes and let go after its last episode, so what the run holds does not grow
            # with the catalog (a task per episode, all started at once, held every scenario until the end).
            ahead = anyio.Semaphore(2 * config.concurrency)

            async def one(plan: EnvPlan, scenario: Scenario, trial: int) -> None:
                try:
                    await episode_of(plan, scenario, trial)
                finally:
                    ahead.release()
                    pool.finished(plan.env_id)

            def trial_done(plan: EnvPlan, scenario: Scenario) -> None:
                trials_left[plan.env_id, scenario.id] -= 1
                if not trials_left[plan.env_id, scenario.id]:  # its last trial: its reference state goes
                    del trials_left[plan.env_id, scenario.id]
                    references.forget(scenario, plan.env_id)

            async def episode_of(plan: EnvPlan, scenario: Scenario, trial: int) -> None:
                line = plan.lines.get(scenario.id)
                async with limiter, budget.hold(line.length if line is not None else 0):
                    if plan.env_id in following:  # the next environment's server starts while this one's episodes run
                        pool.prepare(plan.env_id)
                        pool.prepare(following.pop(plan.env_id))
                    assert checker is not None and agent is not None
                    try:
                        full = plan.full(scenario)  # its initial state is read only now
                        reference = await reference_for(references, plan, full, pool.source(plan.env_id))
                        result = await run_episode(
                            full,
                            source=pool.source(plan.env_id),
                            reference=reference,
                            agent=agent.for_scenario(full),
                            user=user.for_scenario(full) if user else None,
                            checker=checker,
                            config=config.episode,
                            env_info=plan.env_info,
                            success_convention=plan.success_convention,
                            run_id=manifest.run_id,
                            trial=trial,
                        )
                    finally:
                        trial_done(plan, scenario)
                    # Its states go before its line's bytes are given back, not after its result is written: the
                    # next scenario's state is read as soon as they are (3 MB states: 20 MB parsed, each).
                    del full, reference
                    trim()  # with large states (_allocator.py), what their parse freed goes back now
                # Before the result: a run killed at any point says which layers each finished episode ran under.
                # Only this episode's environment is looked at (looking at every server the run started, and
                # comparing with all run.json held, grew with the catalog). A finished episode is written even
                # when the run is being cancelled (Ctrl-C): shielded.
                record_isolation(run_dir, manifest, isolation_reports(checker, pool, plan.env_id))
                with anyio.CancelScope(shield=True):
                    on_result(result)  # no await between: in the order the appender queues the lines
                    await results.append(result)
                progress.add(result)

            # What exists now (plans, the catalog's states, servers' clients) lives as long as the run: the
            # cyclic collector skips it (its full passes walked every scenario's state again and again). An
            # episode makes tens of thousands of short-lived containers, few of them in cycles: the youngest
            # generation is collected every _GC_YOUNG allocations instead of 700 (2 % of the harness's CPU).
            gc.freeze()
            thresholds = gc.get_threshold()
            gc.set_threshold(_GC_YOUNG, *thresholds[1:])
            try:
                async with anyio.create_task_group() as tg:
                    for plan in plans:
                        pairs = _pending(plan, config.trials, done)
                        if not pairs:
                            continue
                        headers = {s.id: s for s in await anyio.to_thread.run_sync(plan.headers)}
                        trials_left.update((plan.env_id, sid) for sid, _ in pairs)
                        for sid, trial in pairs:
                            await ahead.acquire()
                            tg.start_soon(one, plan, headers[sid], trial)
                        del headers, pairs
            finally:
                gc.set_threshold(*thresholds)
                gc.unfreeze()
                record_isolation(run_dir, manifest, isolation_reports(checker, pool))
                run_dir.fold_isolation(manifest)
    except BaseException as exc:
        error = _first_error(exc)
        if isinstance(error, Exception) and not isinstance(error, EnvScalerError):
            raise _harness_bug(run_dir, manifest, exc) from error
        if error is exc:
            raise
        raise error from exc
    return run_dir


async def _run_remote(remote: RemoteEpisodes, config: RunConfig, plans: list[EnvPlan],
                      todo: list[tuple[str, str, int]], run_dir: RunDir, manifest: RunManifest, planned: int,
                      done: int, console: Console, on_result: Callable[[EpisodeResult], None]) -> None:
    """The todo pairs as remote episodes; each finished one is appended here, as a local run does."""
    remote.connect(config)
    with RunProgress(planned, done=done, enabled=config.progress, console=console) as progress:

        def finished(result: EpisodeResult, isolation: dict[str, IsolationReport]) -> None:
            record_isolation(run_dir, manifest, isolation)  # the worker's, before its first result
            on_result(result)
            run_dir.append(result)
            progress.add(result)

        try:
            await remote.run(config, plans, todo, manifest.run_id, finished,
                             lambda message: console.print(f"[yellow]warning:[/] {message}"))
        finally:
            run_dir.fold_isolation(manifest)


def _ignore(result: EpisodeResult) -> None:
    """No one is told of the records (run_eval without `on_result`)."""


def large_states(plans: list[EnvPlan]) -> bool:
    """Whether a scenario's line is over half the bytes in flight (catalog.inflight): such episodes run one at a
    time."""
    return is_large_line(max((line.length for p in plans for line in p.lines.values()), default=0))


def validator_workers(concurrency: int, plans: list[EnvPlan]) -> int:
    """The validator processes of a run: one per CPU, at most one per episode at a time; one with large states
    (their episodes run one at a time, and a second process would only keep its own copy of their parsed states:
    about 45 MB each for 3 MB states)."""
    return 1 if large_states(plans) else max(1, min(concurrency, os.cpu_count() or 1))


def _pending(plan: EnvPlan, trials: int, done: set[tuple[str, int]]) -> list[tuple[str, int]]:
    """The plan's (scenario id, trial) pairs not yet done, in the run's order."""
    return [(sid, t) for sid in plan.scenario_ids() for t in range(trials) if (sid, t) not in done]


async def reference_for(references: ReferenceCache, plan: EnvPlan, scenario: Scenario, source: EpisodeSource
                        ) -> Reference | None:
    """The scenario's reference final state, replayed once per run on the run's own server (None when the
    server has no admin plane: no state to compare)."""
    server = await source.launched() if isinstance(source, PooledSource) else source  # the server behind a slot
    if not has_admin_plane(server if server is not None else source):
        return None
    # A generated server's code is the key of stored references; an external server has none.
    server_dir = server.server_dir if isinstance(server, LaunchedServer) else None
    code = None
    if server_dir is not None:
        if server_dir.path not in references.code_hashes:
            references.code_hashes[server_dir.path] = server_dir.code_hash()
        code = references.code_hashes[server_dir.path]
    return await references.get(scenario, source.episode, plan.free_fields, env_key=plan.env_id, env_hash=code,
                                convention=plan.success_convention)


def isolation_reports(checker: Checker | None, pool: SourcePool, env_id: str | None = None
                      ) -> dict[str, IsolationReport]:
    """The isolation in force: 'validators' (the sandbox) and 'server:<env>' (each environment's servers, or
    only `env_id`'s)."""
    reports = {f"server:{env}": report for env, report in pool.isolation(env_id).items()}
    if isinstance(checker, SandboxChecker):
        reports["validators"] = checker.isolation
    return reports


def record_isolation(run_dir: RunDir, manifest: RunManifest, reports: dict[str, IsolationReport]) -> None:
    """Record the reports not yet known (before the results they cover): appended to the run folder's
    isolation.jsonl, one line per environment, folded into run.json when the run ends (RunDir.fold_isolation)."""
    new = {name: report for name, report in reports.items() if manifest.isolation.get(name) != report}
    if new:
        manifest.isolation.update(new)
        run_dir.append_isolation(new)


def _first_error(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (a usage error raised by every episode is reported once)."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _harness_bug(run_dir: RunDir, manifest: RunManifest, exc: BaseException) -> HarnessError:
    """Write the traceback to error.log and say so in one line (the finished episodes stay in results.jsonl)."""
    log = run_dir.path / ERROR_LOG
    text = "".join(traceback.format_exception(exc))
    atomic_write_text(log, f"{datetime.now(UTC).isoformat(timespec='seconds')} {manifest.run_id}\n{text}")
    return HarnessError(
        f"internal error in the harness ({describe(_first_error(exc))}); the run stopped. Its finished "
        f"episodes are kept in {run_dir.path}; the traceback is in {log}. Please report it; --resume "
        "continues the run once it is fixed."
    )
