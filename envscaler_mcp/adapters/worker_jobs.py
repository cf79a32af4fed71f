"""What a local worker process runs (adapters/worker_main.py): an eval's episodes or the gate's scenarios, each
through the one-process code (harness.episode.run_episode, qa.batch.judge) with this process's own validator
sandbox and one server per environment it was given, started on its first item and stopped when the driver
releases it. A record is the JSON the driver writes: an episode's result with the isolation it ran under, or a
gate report's line."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import anyio

from envscaler_mcp.catalog.inflight import LineBudget
from envscaler_mcp.catalog.store import ScenarioLine
from envscaler_mcp.errors import UsageError, ValidatorError
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.pool import SourcePool, open_pool
from envscaler_mcp.harness.run import isolation_reports, open_source, reference_for
from envscaler_mcp.harness.seats import seat_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.batch import (
    GateSettings,
    Item,
    StoredScenario,
    Target,
    failing_factory,
    judge,
    target_of,
)
from envscaler_mcp.qa.results import report_line
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.references.store import ReferenceStore
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario


class Job(Protocol):
    """A worker's job: entered once, then `setup`, `run` and `release` per environment `key`."""

    async def __aenter__(self) -> Job: ...

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    def setup(self, key: str, setup: Any) -> None: ...

    async def run(self, key: str, item: Any) -> Any: ...

    def release(self, key: str) -> None: ...

    async def prepare(self, key: str) -> None: ...


class _Held:
    """Context managers held open per key in tasks of one task group (anyio closes a context in the task that
    entered it), each closed when its key is released or the job ends."""

    def __init__(self) -> None:
        self._stack = AsyncExitStack()
        self._tg: anyio.abc.TaskGroup | None = None
        self._held: dict[str, tuple[anyio.Event, anyio.Event, list[Any]]] = {}

    async def __aenter__(self) -> _Held:
        self._tg = await self._stack.enter_async_context(anyio.create_task_group())
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
                        ) -> None:
        for _ready, stop, _value in self._held.values():
            stop.set()
        await self._stack.aclose()

    async def get(self, key: str, opener: Callable[[], AbstractAsyncContextManager[Any]]) -> Any:
        """The value of `key`'s context, entered now if it is not open (an error entering it is raised here and
        by every later `get` until the key is released)."""
        if key not in self._held:
            assert self._tg is not None
            self._held[key] = (anyio.Event(), anyio.Event(), [])
            self._tg.start_soon(self._hold, self._held[key], opener)
        ready, _stop, value = self._held[key]
        await ready.wait()
        if isinstance(value[0], BaseException):
            raise value[0]
        return value[0]

    async def _hold(self, held: tuple[anyio.Event, anyio.Event, list[Any]],
                    opener: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        ready, stop, value = held
        try:
            async with opener() as opened:
                value.append(opened)
                ready.set()
                await stop.wait()
        except Exception as exc:
            if ready.is_set():
                raise
            value.append(exc)
            ready.set()

    def release(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is not None:
            held[1].set()


class _HeldJob:
    """What both jobs share: an exit stack closed on exit, and the servers held per environment key."""

    def __init__(self) -> None:
        self._stack = AsyncExitStack()
        self._held = _Held()

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
                        ) -> None:
        await self._stack.aclose()

    def release(self, key: str) -> None:
        self._held.release(key)


class EvalJob(_HeldJob):
    """An eval's episodes: `setup` is an environment's plan, an item (scenario id, trial, last)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.config = RunConfig.model_validate(message["config"])
        self.run_id: str = message["run_id"]
        self.validator_workers: int = message["validator_workers"]
        self.plans: dict[str, tuple[EnvPlan, dict[str, Scenario]]] = {}
        self.references = ReferenceCache(store=ReferenceStore())
        self.budget = LineBudget()
        self.agent = seat_for(self.config.agent, role="agent", base_url=self.config.agent_base_url)
        self.user = (seat_for(self.config.user, role="user")
                     if self.config.user and self.config.episode.mode == "conversation" else None)
        super().__init__()

    async def __aenter__(self) -> EvalJob:
        self.checker = await self._stack.enter_async_context(SandboxChecker(
            timeout_s=self.config.validator_timeout_s, workers=self.validator_workers))
        self._stack.push_async_callback(self.agent.aclose)
        if self.user is not None:
            self._stack.push_async_callback(self.user.aclose)
        await self._stack.enter_async_context(self._held)
        return self

    def setup(self, key: str, setup: Any) -> None:
        plan = EnvPlan.model_validate(setup)
        self.plans[key] = (plan, {s.id: s for s in plan.headers()})  # read here, held while it has the environment

    def release(self, key: str) -> None:
        super().release(key)
        self.plans.pop(key, None)

    async def _pool(self, key: str) -> SourcePool:
        plan, _headers = self.plans[key]
        pool: SourcePool = await self._held.get(key, lambda: open_pool({key: partial(open_source, plan, self.config)}))
        return pool

    async def prepare(self, key: str) -> None:
        (await self._pool(key)).prepare(key)  # its server starts now, without waiting for it

    async def run(self, key: str, item: Any) -> Any:
        plan, headers = self.plans[key]
        pool = await self._pool(key)
        line = plan.lines.get(item["scenario_id"])
        async with self.budget.hold(line.length if line is not None else 0):
            scenario = plan.full(headers[item["scenario_id"]])  # its initial state is read only now
            source = pool.source(key)
            reference = await reference_for(self.references, plan, scenario, source)
            result = await run_episode(
                scenario, source=source, reference=reference, agent=self.agent.for_scenario(scenario),
                user=self.user.for_scenario(scenario) if self.user else None, checker=self.checker,
                config=self.config.episode, env_info=plan.env_info, success_convention=plan.success_convention,
                run_id=self.run_id, trial=item["trial"],
            )
        if item.get("last"):  # its last trial: its reference state goes
            self.references.forget(scenario, key)
        name = f"worker:{os.getpid()}"
        isolation = {f"{name}/{k}": report.model_dump(mode="json")
                     for k, report in isolation_reports(self.checker, pool, key).items()}
        # the record as pydantic encodes it, a string in the message: the driver parses it once, in pydantic's own
        # parser, rather than as a JSON object first and then as a model
        return {"result": result.model_dump_json(), "isolation": isolation}


@dataclass
class _Server:
    factory: EpisodeFactory
    target: Target


class GateJob(_HeldJob):
    """The gate's scenarios: `setup` is the server target (an env id or path), an item a scenario (whole, or
    where its line is)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.settings = GateSettings(**message["settings"])
        self.targets: dict[str, str] = {}
        self.references = ReferenceCache(store=ReferenceStore(), reuse=False)
        self.budget = LineBudget()
        super().__init__()

    async def __aenter__(self) -> GateJob:
        self.sandbox = await self._stack.enter_async_context(
            ValidatorSandbox(timeout_s=self.settings.timeout_s, workers=self.settings.workers))
        await self._stack.enter_async_context(self._held)
        return self

    def setup(self, key: str, setup: Any) -> None:
        self.targets[key] = setup["target"]

    async def prepare(self, key: str) -> None:
        await self._held.get(key, lambda: self._server(key))  # the server starts now

    @asynccontextmanager
    async def _server(self, key: str) -> AsyncIterator[_Server]:
        """The server of `key`'s target, or (it did not start) a factory that fails its scenarios with why."""
        target = self.targets[key]
        async with AsyncExitStack() as stack:
            try:
                server = await stack.enter_async_context(
                    launch_server(target, transport=self.settings.transport, scenarios=()))
            except (UsageError, ValidatorError):
                raise
            except Exception as exc:  # as qa.batch.check_groups: the scenarios of a server that did not start fail
                yield _Server(failing_factory(exc), target_of(target))
                return
            code = server.server_dir.code_hash() if server.server_dir is not None else None
            yield _Server(server.episode, replace(target_of(target), code=code))

    async def run(self, key: str, item: Any) -> Any:
        server: _Server = await self._held.get(key, lambda: self._server(key))
        scenario: Item
        if "scenario" in item:
            scenario = Scenario.model_validate(item["scenario"])
        else:
            scenario = StoredScenario(Path(item["path"]), Scenario.model_validate(item["header"]),
                                      ScenarioLine(**item["line"]))
        size = scenario.line.length if isinstance(scenario, StoredScenario) else 0
        async with self.budget.hold(size):
            report = await judge(scenario, server.factory, self.sandbox, server.target, self.references,
                                 require_reference=self.settings.require_reference, mutation=self.settings.mutation)
        return report_line(report)


def make_job(message: dict[str, Any]) -> Job:
    """The job the driver's first message names."""
    kind = message.get("job")
    if kind == "eval":
        return EvalJob(message)
    if kind == "gate":
        return GateJob(message)
    raise UsageError(f"unknown worker job {kind!r}")
