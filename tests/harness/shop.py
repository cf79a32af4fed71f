"""Helpers for harness tests on the mini_shop fixture environment (tests/fixtures/mini_shop)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, Tool

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.harness.external import external_source
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.launch import launch_server, resolve_target
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"
SKELETON = load_skeleton(MINI_SHOP)
SCENARIOS = load_scenarios(MINI_SHOP / "scenarios.jsonl")
BOB, ALICE = (
    SCENARIOS  # Bob: cancel O-1002 + note (2 checks); Alice: cancel O-1001, O-1004 with reason (4 checks)
)
ENV_INFO = EnvInfo(name=SKELETON.name, introduction=SKELETON.introduction, rules=SKELETON.rules)


def calls(*items: tuple[str, dict[str, Any]], text: str = "", reasoning: str | None = None) -> Message:
    """An assistant turn with these tool calls."""
    return Message(
        role="assistant",
        content=text,
        reasoning=reasoning,
        tool_calls=[
            ToolCallRequest(id=f"call_{i}_{name}", name=name, arguments=args)
            for i, (name, args) in enumerate(items)
        ],
    )


def replay_agent(scenario: Scenario) -> MockProvider:
    """A scripted agent replaying the reference solution one call per turn, then answering."""
    turns = [calls((c.tool, c.arguments)) for c in scenario.reference_solution]
    return MockProvider([*turns, "Task completed."])


@asynccontextmanager
async def shop_server(transport: str = "memory") -> AsyncIterator[Any]:
    """The mini_shop server launched on a transport."""
    launch = launch_server(SKELETON, transport=transport, scenarios=SCENARIOS)  # type: ignore[arg-type]
    async with launch as server:
        yield server


@asynccontextmanager
async def external_shop() -> AsyncIterator[Any]:
    """The rendered mini_shop server as an external stdio command (`--server`): tools only, no admin plane."""
    rendered = resolve_target(SKELETON, [])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(rendered.path)
    try:
        async with external_source(command=f"{sys.executable} -m {rendered.package}") as source:
            yield source
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


class CrashingSource:
    """Fault injection around a real server: calling `crash_on` raises a transport error (a crash)."""

    def __init__(self, server: Any, crash_on: str) -> None:
        self.server, self.crash_on = server, crash_on

    @asynccontextmanager
    async def episode(self, initial_state: dict[str, Any] | None = None) -> AsyncIterator[Any]:
        async with self.server.episode(initial_state) as ep:
            yield _CrashingEpisode(ep, self.crash_on)


class _CrashingEpisode:
    def __init__(self, ep: Any, crash_on: str) -> None:
        self.ep, self.crash_on = ep, crash_on

    async def list_tools(self) -> list[Tool]:
        return list(await self.ep.list_tools())

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        if name == self.crash_on:
            raise ConnectionResetError("connection to the server was lost")
        return await self.ep.call_tool(name, arguments)

    async def get_state(self) -> dict[str, Any]:
        return dict(await self.ep.get_state())


@asynccontextmanager
async def counted_episodes() -> AsyncIterator[tuple[Any, list[int]]]:
    """An episode factory on an in-memory mini_shop server, and how many episodes it has opened."""
    opened = [0]
    async with launch_server(SKELETON, transport="memory", scenarios=SCENARIOS) as server:
        @asynccontextmanager
        async def factory(state: Any) -> AsyncIterator[Any]:
            opened[0] += 1
            async with server.episode(state) as ep:
                yield ep

        yield factory, opened
