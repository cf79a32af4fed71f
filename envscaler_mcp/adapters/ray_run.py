"""Episodes on a Ray cluster: one actor per worker slot, each with its own server pool and validator sandbox.

Only the driver writes the run folder: each finished episode comes back as a record and is appended to
results.jsonl by the caller (the same file, resume rule and summary as a local run), with the isolation in
force on the worker that ran it ('worker:<node ip>:<pid>/validators', '.../server:<env>'), which the caller
writes into run.json before the record. A lost actor (its
process or node gone) loses only the episodes in flight on it; they are queued again on another actor. An
episode that ends on an infra error after its own retries is tried once more on another actor.

`RayEpisodes` is the harness's remote runner for such a run (harness/run.py RemoteEpisodes): `eval --ray` passes it
to `run_eval`. Imported only when a run asks for Ray; `ray` is the optional extra `.[ray]`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from envscaler_mcp.catalog.paths import data_root, package_root, set_home
from envscaler_mcp.errors import EnvScalerError, UsageError
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.pool import SourcePool, open_pool
from envscaler_mcp.harness.run import Finished, isolation_reports, open_source, reference_for
from envscaler_mcp.harness.seats import seat_for
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.scenario.models import Scenario

try:
    import ray
    from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError
except ImportError:  # pragma: no cover - reported by connect()
    ray = None  # type: ignore[assignment]

class EpisodeWorker:
    """A Ray actor: opens the run's servers and a validator sandbox on its node once, then runs episodes."""

    def __init__(self, config: dict[str, Any], plans: list[dict[str, Any]], run_id: str,
                 home: str | None = None) -> None:
        if home is not None:  # the driver's data home (--home): environment ids resolve there, as in the driver
            set_home(Path(home))
        self.config = RunConfig.model_validate(config)
        self.plans = {p["env_id"]: EnvPlan.model_validate(p) for p in plans}
        self.run_id = run_id
        self._headers: OrderedDict[str, dict[str, Scenario]] = OrderedDict()
        self._ready: asyncio.Future[tuple[SourcePool, SandboxChecker]] | None = None
        self._stop = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None
        self._references = ReferenceCache()
        self._agent = seat_for(self.config.agent, role="agent", base_url=self.config.agent_base_url)
        self._user = (
            seat_for(self.config.user, role="user")
            if self.config.user and self.config.episode.mode == "conversation"
            else None
        )

    def pid(self) -> int:
        """The actor's process id (the tests stop a worker by it)."""
        return os.getpid()

    async def _hold(self) -> None:
        """Keep the pool and the sandbox open in one task (their task groups must close where they opened)."""
        assert self._ready is not None
        try:
            async with AsyncExitStack() as stack:
                checker = await stack.enter_async_context(
                    SandboxChecker(timeout_s=self.config.validator_timeout_s,
                                   workers=max(1, min(self.config.concurrency, os.cpu_count() or 1)))
                )
                needed = {env: partial(open_source, plan, self.config) for env, plan in self.plans.items()}
                pool = await stack.enter_async_context(open_pool(needed))
                self._ready.set_result((pool, checker))
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    async def run(self, env_id: str, scenario_id: str, trial: int) -> dict[str, Any]:
        """Run one (scenario, trial) episode here: {"result": its record, "isolation": this worker's reports}
        (JSON)."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._holder = asyncio.create_task(self._hold())
        pool, checker = await asyncio.shield(self._ready)
        plan = self.plans[env_id]
        scenario = plan.full(self._header(env_id, scenario_id))
        source = pool.source(env_id)
        reference = await reference_for(self._references, plan, scenario, source)
        result = await run_episode(
            scenario,
            source=source,
            reference=reference,
            agent=self._agent.for_scenario(scenario),
            user=self._user.for_scenario(scenario) if self._user else None,
            checker=checker,
            config=self.config.episode,
            env_info=plan.env_info,
            success_convention=plan.success_convention,
            run_id=self.run_id,
            trial=trial,
        )
        name = f"worker:{ray.util.get_node_ip_address()}:{os.getpid()}"  # type: ignore[no-untyped-call]
        isolation = {f"{name}/{key}": report.model_dump(mode="json")
                     for key, report in isolation_reports(checker, pool).items()}
        return {"result": result.model_dump(mode="json"), "isolation": isolation}

    def _header(self, env_id: str, scenario_id: str) -> Scenario:
        """A scenario of the plan without its initial state; the headers of the last two environments used are
        kept (an actor takes its episodes environment by environment)."""
        if env_id not in self._headers:
            self._headers[env_id] = {s.id: s for s in self.plans[env_id].headers()}
            while len(self._headers) > 2:
                self._headers.popitem(last=False)
        self._headers.move_to_end(env_id)
        return self._headers[env_id][scenario_id]

    async def close(self) -> None:
        """Stop this actor's servers and sandbox."""
        self._stop.set()
        if self._holder is not None:
            await asyncio.gather(self._holder, return_exceptions=True)
        await self._agent.aclose()
        if self._user is not None:
            await self._user.aclose()


def driver_home() -> str | None:
    """The driver's data home when it is not the package's (--home): workers resolve environment ids there."""
    return None if data_root() == package_root() else str(data_root())


def cluster_cpus() -> int:
    """The CPUs of the cluster this driver joined (the default number of workers)."""
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    return max(1, int(resources.get("CPU", 1)))


_joined = False  # this process's Ray session was started by connect() (not by a program embedding us)


def connect(address: str) -> None:
    """Join the Ray cluster at `address` ('auto': the running one; 'local': a private one on loopback). A
    session the process already has (a program that called ray.init itself) is used as it is."""
    if ray is None:
        raise UsageError("--ray needs Ray: pip install 'envscaler-mcp[ray]'")
    if ray.is_initialized():
        return
    _check_reachable(address)
    try:
        if address == "local":
            ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except ConnectionError as exc:
        raise UsageError(
            f"--ray {address}: no Ray cluster there ({exc}); start one with `ray start --head`, "
            "or pass --ray local for a private one on this machine"
        ) from None
    global _joined
    _joined = True


@contextlib.contextmanager
def driver_session() -> Iterator[None]:
    """A command's work on the cluster, its stdout kept for its results.

    Whatever `log_to_driver` says, the driver's error listener prints what the cluster reports (a worker killed,
    an actor's death) to this process's stdout, at any time. A command's stdout is its results (the gate's
    `--json` list, eval's table), so during the work those lines go to stderr, and at the end the driver leaves
    the cluster (which joins the listener and flushes what it held) before the command prints anything. A
    session connect() did not start (the embedding program's own ray.init) is left as it is."""
    global _joined
    with contextlib.redirect_stdout(sys.stderr):
        try:
            yield
        finally:
            if _joined and ray is not None and ray.is_initialized():  # a session of the embedding program's stays
                _joined = False
                ray.shutdown()


def _check_reachable(address: str) -> None:
    """A HOST:PORT address must accept a connection (Ray itself would retry it for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise UsageError(
            f"--ray {address}: no Ray cluster answers there ({exc.strerror or exc}); start one with "
            "`ray start --head`, or pass --ray local for a private one on this machine"
        ) from None


def _from_worker(exc: RayTaskError) -> Exception:
    """What an episode raised on a worker: a known error as its own one line (naming the worker, whose
    environment may differ from the driver's), anything else as is (a harness bug, with the worker's traceback)."""
    cause = exc.cause
    if not isinstance(cause, EnvScalerError):
        return exc
    try:
        return type(cause)(f"{cause} (on a Ray worker: a worker's environment is the one `ray start` had on "
                           "its node, see docs/ray.md)")
    except TypeError:  # an error class with another constructor: its own message
        return cause


@dataclass
class _Slot:
    handle: Any
    in_flight: dict[Any, tuple[Any, ...]] = field(default_factory=dict)


@dataclass
class RayDispatch:
    """Runs work items (argument tuples of the actors' `run`) on `workers` actors made by `start_actor`,
    calling `on_result(item, record)` in the driver for each one, in the order they finish.

    A lost actor's items in flight are queued again (a replacement actor is started, up to twice the worker
    count); a record for which `retry_elsewhere(record)` is true is run once more on another actor first."""

    start_actor: Callable[[], Any]
    workers: int
    per_worker: int
    on_result: Callable[[tuple[Any, ...], Any], None]
    retry_elsewhere: Callable[[Any], bool] = lambda _record: False
    on_lost: Callable[[str], None] = lambda _message: None
    max_replacements: int = 0
    lost_workers: int = 0
    moved: int = 0
    slots: list[_Slot] = field(default_factory=list)

    def pids(self) -> list[int]:
        """The process ids of the live actors."""
        return [int(ray.get(s.handle.pid.remote())) for s in self.slots]

    def run(self, todo: list[tuple[Any, ...]]) -> None:
        """Run every item once (blocking; call from a worker thread)."""
        queue: deque[tuple[tuple[Any, ...], _Slot | None]] = deque((item, None) for item in todo)
        moved: set[int] = set()  # id() of the items run once more (items may hold unhashable payloads)
        replacements = self.max_replacements or self.workers * 2
        if not self.slots:
            self.slots = [_Slot(self.start_actor()) for _ in range(max(1, self.workers))]
        try:
            while queue or any(s.in_flight for s in self.slots):
                self._fill(queue)
                refs = [ref for s in self.slots for ref in s.in_flight]
                if not refs:
                    raise UsageError("every Ray worker was lost; the finished work is kept (--resume)")
                ready, _ = ray.wait(refs, num_returns=1)
                ref = ready[0]
                slot_index, slot = next((i, s) for i, s in enumerate(self.slots) if ref in s.in_flight)
                item = slot.in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as exc:
                    lost = list(slot.in_flight.values())
                    self.slots.pop(slot_index)
                    self.lost_workers += 1
                    queue.extendleft((i, None) for i in [item, *lost])
                    self.on_lost(f"a Ray worker was lost ({type(exc).__name__}); {1 + len(lost)} "
                                 "item(s) in flight on it queued again")
                    if replacements > 0:
                        replacements -= 1
                        self.slots.append(_Slot(self.start_actor()))
                    continue
                except RayTaskError as exc:
                    raise _from_worker(exc) from None
                if id(item) not in moved and len(self.slots) > 1 and self.retry_elsewhere(record):
                    moved.add(id(item))
                    self.moved += 1
                    queue.append((item, slot))  # once more, on another worker
                    continue
                self.on_result(item, record)
        finally:
            self.close()

    def _fill(self, queue: deque[tuple[tuple[Any, ...], _Slot | None]]) -> None:
        """Give each actor up to `per_worker` episodes, keeping a moved episode off the actor it failed on."""
        skipped: list[tuple[tuple[Any, ...], _Slot | None]] = []
        while queue:
            item, avoid = queue.popleft()
            free = [i for i, s in enumerate(self.slots) if len(s.in_flight) < self.per_worker]
            choices = [i for i in free if self.slots[i] is not avoid] or (free if len(self.slots) == 1 else [])
            if not free:
                queue.appendleft((item, avoid))
                break
            if not choices:
                skipped.append((item, avoid))
                continue
            slot = self.slots[min(choices, key=lambda i: len(self.slots[i].in_flight))]
            slot.in_flight[slot.handle.run.remote(*item)] = item
        queue.extendleft(reversed(skipped))

    def close(self) -> None:
        """Stop every actor (its servers first, then the process)."""
        for slot in self.slots:
            try:
                ray.get(slot.handle.close.remote(), timeout=30)
            except Exception:  # a lost actor has nothing left to close
                pass
            ray.kill(slot.handle)
        self.slots = []


def episode_dispatch(config: RunConfig, plans: list[EnvPlan], run_id: str, workers: int,
                     on_result: Callable[[EpisodeResult, dict[str, IsolationReport]], None],
                     on_lost: Callable[[str], None]) -> RayDispatch:
    """The dispatch of an eval run: (env id, scenario id, trial) items on EpisodeWorker actors; an episode
    that ends on an infra error is run once more on another worker."""
    actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EpisodeWorker)
    config_json, plans_json = config.model_dump(mode="json"), [p.model_dump(mode="json") for p in plans]
    home = driver_home()

    def finished(_item: tuple[Any, ...], record: dict[str, Any]) -> None:
        on_result(EpisodeResult.model_validate(record["result"]),
                  {k: IsolationReport.model_validate(v) for k, v in record["isolation"].items()})

    return RayDispatch(
        start_actor=lambda: actor.remote(config_json, plans_json, run_id, home),
        workers=workers, per_worker=config.concurrency, on_result=finished, on_lost=on_lost,
        retry_elsewhere=lambda record: record["result"]["status"] == "infra_error",
    )


class RayEpisodes:
    """A run's episodes on EpisodeWorker actors (harness/run.py RemoteEpisodes): `eval --ray`."""

    def connect(self, config: RunConfig) -> None:
        if config.server_cmd or config.url:
            raise UsageError("--ray runs the bundled or generated environments; --server/--url are local only")
        connect(config.ray or "auto")

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Callable[[str], None]) -> None:
        workers = config.ray_workers or cluster_cpus()
        dispatch = episode_dispatch(config, plans, run_id, workers, finished, warn)
        with driver_session():
            await anyio.to_thread.run_sync(dispatch.run, todo)
