"""Gate many scenario sets: one server per set (a few sets at a time), the scenarios of a set replayed a few at a
time.

A set may be given lazily (a function that lists it, called when its turn comes) and its scenarios as
StoredScenario (a header and where its line is), so that a gate over a 1,000-environment catalog or over
scenarios with megabytes of state holds only the scenarios being gated: each is read in full when its check
starts and dropped, with its reference final state, when its report is done.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio

from envscaler_mcp._allocator import give_back_large_buffers, trim
from envscaler_mcp._json import State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.catalog.inflight import IN_FLIGHT_BYTES, LineBudget, is_large_line
from envscaler_mcp.catalog.store import ScenarioLine, load_scenario_line
from envscaler_mcp.errors import UsageError, ValidatorError
from envscaler_mcp.launch import Transport, launch_server
from envscaler_mcp.qa.gate import GateReport, WrongSolution, check_scenario
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.references.store import ReferenceStore
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton, FreeField


@dataclass(frozen=True)
class StoredScenario:
    """A scenario of a JSONL file known by its header (the scenario without its initial state) and its line."""

    path: Path
    header: Scenario
    line: ScenarioLine

    def load(self) -> Scenario:
        """The scenario in full (UsageError when its file changed meanwhile)."""
        return load_scenario_line(self.path, self.line, self.header.id)


Item = Scenario | StoredScenario


def is_large(item: Item) -> bool:
    """Whether a scenario's line is over half the bytes in flight (catalog.inflight): such scenarios are gated
    one at a time, as eval runs their episodes (harness/run.py large_states)."""
    return isinstance(item, StoredScenario) and is_large_line(item.line.length)
# (server target: env id, path or EnvSkeleton; its scenarios, or a function that lists them when its turn comes)
Group = tuple[Any, Sequence[Item] | Callable[[], Sequence[Item]]]


def _skeleton_of(target: Any) -> EnvSkeleton | None:
    """The skeleton of a server target (env id, skeleton path or EnvSkeleton); None when it has none."""
    if isinstance(target, EnvSkeleton):
        return target
    from envscaler_mcp.catalog.store import get_skeleton

    try:
        return get_skeleton(str(target))
    except (UsageError, OSError, ValueError):
        return None


def free_fields_of(target: Any) -> list[FreeField]:
    """The free fields of a server target (env id, skeleton path or EnvSkeleton); [] when it has no skeleton."""
    skeleton = _skeleton_of(target)
    return list(skeleton.free_fields) if skeleton is not None else []


@dataclass(frozen=True)
class Target:
    """A server target (env id, skeleton path or EnvSkeleton) with what gating its scenarios needs."""

    target: Any
    key: str
    free: list[FreeField]
    convention: str
    code: str | None = None  # its launched server's content hash (ServerDir.code_hash): the reference store's key


def target_of(target: Any) -> Target:
    """The target with its key, its skeleton's free fields (for the state check) and success convention."""
    skeleton = _skeleton_of(target)
    return Target(target, target.id if isinstance(target, EnvSkeleton) else str(target),
                  list(skeleton.free_fields) if skeleton is not None else [],
                  skeleton.success_convention if skeleton is not None else DEFAULT_CONVENTION)


async def judge(item: Item, factory: EpisodeFactory, sandbox: ValidatorSandbox, target: Target,
                references: ReferenceCache, *, require_reference: bool = True, mutation: bool = False,
                wrong_solutions: Callable[[Scenario], Sequence[WrongSolution]] | None = None) -> GateReport:
    """Gate one scenario (read in full only now) on `factory`'s episodes; its replay and final state are
    dropped once its report is done (10,000 reports would hold 10,000 final states)."""
    sc = item.load() if isinstance(item, StoredScenario) else item
    report = await check_scenario(sc, factory, sandbox, require_reference=require_reference, mutation=mutation,
                                  wrong_solutions=wrong_solutions(sc) if wrong_solutions else (),
                                  free_fields=target.free, references=references, env_key=target.key,
                                  env_hash=target.code, convention=target.convention)
    references.forget(sc, target.key)
    report.final_state = None
    return report


@dataclass(frozen=True)
class GateSettings:
    """How a gate runs: the servers' transport, the validator sandbox (seconds per validator, worker processes),
    what a scenario must prove (the mutation probes, a reference solution), and how much runs at once
    (scenarios in all, or per worker on Ray; environments, one server each)."""

    transport: Transport = "pipe"
    timeout_s: float = 2.0
    workers: int = 2
    mutation: bool = False
    require_reference: bool = True
    concurrency: int = 8
    servers: int = 1


_DEFAULT = GateSettings()


class _SandboxOnDemand:
    """The gate's validator sandbox, started when the first environment's scenarios are listed (a lazily listed
    catalog is listed an environment at a time): with one worker process when some of them are large, else
    `settings.workers`. Large scenarios are gated one at a time (catalog.inflight) and their requests go one
    after the other, so a second worker would only start a second zygote and keep a batch process's parse of
    their states of its own (about 20 MB beside the first for 3 MB states), as eval does (harness/run.py
    validator_workers)."""

    def __init__(self, settings: GateSettings, stack: AsyncExitStack) -> None:
        self._settings = settings
        self._stack = stack
        self._lock = anyio.Lock()
        self._sandbox: ValidatorSandbox | None = None

    async def get(self, items: Sequence[Item]) -> ValidatorSandbox:
        """The sandbox, started now if it is not yet, its workers chosen by `items`."""
        async with self._lock:
            if self._sandbox is None:
                workers = 1 if any(is_large(item) for item in items) else self._settings.workers
                self._sandbox = await self._stack.enter_async_context(
                    ValidatorSandbox(timeout_s=self._settings.timeout_s, workers=workers))
            return self._sandbox


def failing_factory(error: Exception) -> EpisodeFactory:
    """An episode factory that raises `error`: the scenarios of a server that did not start fail with it."""

    @asynccontextmanager
    async def factory(_state: State) -> AsyncIterator[Any]:
        raise error
        yield  # pragma: no cover

    return factory


async def check_groups(groups: list[Group], settings: GateSettings = _DEFAULT, *,
                       on_report: Callable[[GateReport], None] | None = None,
                       wrong_solutions: Callable[[Scenario], Sequence[WrongSolution]] | None = None,
                       in_flight_bytes: int = IN_FLIGHT_BYTES, keep: bool = True) -> list[GateReport]:
    """Gate each group's scenarios on a server of its own, `settings.servers` groups at a time,
    `settings.concurrency` scenarios at a time in all, and no more than `in_flight_bytes` of scenario lines
    (catalog.inflight: a scenario of megabyte states costs the process tree tens of megabytes while checked); a
    server that fails to start fails its scenarios. Reports come back in input order.

    `wrong_solutions`, when given, derives more wrong solutions from each scenario (checked after its own).
    Each target's free fields (its skeleton's) go to the state check; reference replays are shared.
    `keep=False`: each report only goes to `on_report` and none is returned (a gate of any size holds none).
    """
    done: dict[tuple[int, int], GateReport | None] = {}
    limiter = anyio.Semaphore(max(1, settings.concurrency))
    budget = LineBudget(in_flight_bytes)
    server_slots = anyio.Semaphore(max(1, settings.servers))
    # Every reference is replayed (that is a check of the gate) and kept in the store, where a later eval of the
    # same server and scenario reads it instead of replaying it again (references/store.py).
    references = ReferenceCache(store=ReferenceStore(), reuse=False)
    fatal: list[BaseException] = []

    async def gate_one(key: tuple[int, int], item: Item, factory: EpisodeFactory, sandbox: ValidatorSandbox,
                       target: Target) -> None:
        large = is_large(item)
        if large:  # _allocator.py: the states' texts and parses unmapped when freed, as in eval
            give_back_large_buffers()
        async with limiter, budget.hold(item.line.length if isinstance(item, StoredScenario) else 0):
            report = await judge(item, factory, sandbox, target, references,
                                 require_reference=settings.require_reference, mutation=settings.mutation,
                                 wrong_solutions=wrong_solutions)
            if large:
                trim()  # what its parses freed goes back before the next scenario's are read
        done[key] = report if keep else None
        if on_report:
            on_report(report)

    async def gate_all(factory: EpisodeFactory, numbered: list[tuple[tuple[int, int], Item]],
                       sandbox: ValidatorSandbox, target: Any, server: Any = None) -> None:
        server_dir = getattr(server, "server_dir", None)
        gating = replace(target_of(target), code=server_dir.code_hash() if server_dir is not None else None)
        async with anyio.create_task_group() as tg:
            for key, item in numbered:
                tg.start_soon(gate_one, key, item, factory, sandbox, gating)

    async def gate_group(g: int, target: Any, scenarios: Sequence[Item] | Callable[[], Sequence[Item]],
                         sandboxes: _SandboxOnDemand, scope: anyio.CancelScope) -> None:
        async with server_slots:
            listed = scenarios() if callable(scenarios) else scenarios
            numbered = [((g, n), item) for n, item in enumerate(listed)]
            if not numbered:
                return
            try:
                sandbox = await sandboxes.get(listed)
            except Exception as exc:  # no validator sandbox: nothing can be gated
                fatal.append(exc)
                scope.cancel()
                return
            try:
                # Rendered without scenarios, as eval's servers: every episode opens at the state handed to it,
                # so the server needs none, and listing and hashing every scenario of the environment to
                # render them in cost more CPU than its scenarios' checks (and a large catalog's
                # initial states would be parsed and held by the server for nothing).
                async with launch_server(target, transport=settings.transport, scenarios=()) as server:
                    await gate_all(server.episode, numbered, sandbox, target, server)
            except Exception as exc:  # the server did not start (or died): record it against every scenario left
                while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]
                left = [(key, item) for key, item in numbered if key not in done]
                if isinstance(exc, UsageError | ValidatorError) or not left:
                    fatal.append(exc)
                    scope.cancel()
                    return
                await gate_all(failing_factory(exc), left, sandbox, target)

    # What exists now (the interpreter's modules and classes, the groups) lives as long as the gate: the cyclic
    # collector skips it, so that its full passes walk only what the scenarios being judged hold.
    gc.freeze()
    try:
        async with AsyncExitStack() as stack:
            sandboxes = _SandboxOnDemand(settings, stack)
            async with anyio.create_task_group() as tg:
                for g, (target, scenarios) in enumerate(groups):
                    tg.start_soon(gate_group, g, target, scenarios, sandboxes, tg.cancel_scope)
    finally:
        gc.unfreeze()
    if fatal:
        raise fatal[0]
    return [report for _, report in sorted(done.items()) if report is not None]
