"""Gate many scenario sets: one server per set, the scenarios of a set replayed a few at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from envscaler_mcp._json import State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.errors import UsageError, ValidatorError
from envscaler_mcp.launch import Transport, launch_server
from envscaler_mcp.qa.gate import GateReport, WrongSolution, check_scenario
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton, FreeField

Group = tuple[Any, list[Scenario]]  # (server target: env id, path or EnvSkeleton; its scenarios)


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


def _env_key(target: Any) -> str:
    return target.id if isinstance(target, EnvSkeleton) else str(target)


def _failing_factory(error: Exception) -> EpisodeFactory:
    @asynccontextmanager
    async def factory(_state: State) -> AsyncIterator[Any]:
        raise error
        yield  # pragma: no cover

    return factory


async def check_groups(groups: list[Group], *, transport: Transport = "http", timeout_s: float = 2.0, workers: int = 2,
                       mutation: bool = False, require_reference: bool = True, concurrency: int = 4,
                       on_report: Callable[[GateReport], None] | None = None,
                       wrong_solutions: Callable[[Scenario], Sequence[WrongSolution]] | None = None) -> list[GateReport]:
    """Start one server per group and gate its scenarios, `concurrency` episodes at a time; a server that
    fails to start fails its scenarios. Reports come back in input order.

    `wrong_solutions`, when given, derives more wrong solutions from each scenario (checked after its own).
    Each target's free fields (its skeleton's) go to the state check; reference replays are shared.
    """
    done: dict[int, GateReport] = {}
    limiter = anyio.Semaphore(max(1, concurrency))
    references = ReferenceCache()

    async def gate_one(n: int, sc: Scenario, factory: EpisodeFactory, sandbox: ValidatorSandbox, target: Any,
                       free: list[FreeField], convention: str) -> None:
        async with limiter:
            report = await check_scenario(sc, factory, sandbox, require_reference=require_reference, mutation=mutation,
                                          wrong_solutions=wrong_solutions(sc) if wrong_solutions else (),
                                          free_fields=free, references=references, env_key=_env_key(target),
                                          convention=convention)
        done[n] = report
        if on_report:
            on_report(report)

    async def gate_all(factory: EpisodeFactory, numbered: list[tuple[int, Scenario]], sandbox: ValidatorSandbox,
                       target: Any) -> None:
        skeleton = _skeleton_of(target)
        free = list(skeleton.free_fields) if skeleton is not None else []
        convention = skeleton.success_convention if skeleton is not None else DEFAULT_CONVENTION
        async with anyio.create_task_group() as tg:
            for n, sc in numbered:
                tg.start_soon(gate_one, n, sc, factory, sandbox, target, free, convention)

    numbered_groups: list[tuple[Any, list[tuple[int, Scenario]]]] = []
    count = 0
    for target, scenarios in groups:
        numbered_groups.append((target, list(enumerate(scenarios, start=count))))
        count += len(scenarios)

    async with ValidatorSandbox(timeout_s=timeout_s, workers=workers) as sandbox:
        for target, numbered in numbered_groups:
            try:
                async with launch_server(target, transport=transport) as server:
                    await gate_all(server.episode, numbered, sandbox, target)
            except Exception as exc:  # the server did not start (or died): record it against every scenario left
                while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                    exc = exc.exceptions[0]
                left = [(n, sc) for n, sc in numbered if n not in done]
                if isinstance(exc, UsageError | ValidatorError) or not left:
                    raise exc from None
                await gate_all(_failing_factory(exc), left, sandbox, target)
    return [done[n] for n in sorted(done)]
