"""Test fixtures: a tiny in-process to-do environment behind the EpisodeSource interface, and an in-process
checker. They stand in for a launched server and the validator sandbox in unit tests of the agent loop."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.types import CallToolResult, TextContent, Tool

from envscaler_mcp.harness.models import CheckOutcome
from envscaler_mcp.harness.source import StateUnavailable
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

TOOLS = [
    Tool(name="list_items", description="List to-do items.", input_schema={"type": "object", "properties": {}}),
    Tool(name="add_item", description="Add an item.",
         input_schema={"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}),
    Tool(name="complete_item", description="Mark an item done.",
         input_schema={"type": "object", "properties": {"item_id": {"type": "string"}}, "required": ["item_id"]}),
]


class FakeEpisode:
    """One episode of the to-do environment; state changes follow the environment conventions."""

    def __init__(self, state: dict[str, Any], admin: bool, fail_on: str | None) -> None:
        self.state = copy.deepcopy(state)
        self.admin = admin
        self.fail_on = fail_on
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(self) -> list[Tool]:
        return list(TOOLS)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        self.calls.append((name, arguments))
        if name == self.fail_on:
            raise ConnectionError("server connection lost")
        try:
            out = getattr(self, "_" + name)(**arguments)
        except TypeError as exc:
            return CallToolResult(content=[TextContent(type="text", text=f"Invalid arguments: {exc}")], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(out))],
                              structured_content=out, is_error=not out["success"])

    async def get_state(self) -> dict[str, Any]:
        if not self.admin:
            raise StateUnavailable("no admin plane")
        return copy.deepcopy(self.state)

    def _list_items(self) -> dict[str, Any]:
        return {"success": True, "data": self.state["items"]}

    def _add_item(self, title: str) -> dict[str, Any]:
        item_id = str(self.state["next_id"])
        self.state["items"][item_id] = {"title": title, "done": False}
        self.state["next_id"] += 1
        return {"success": True, "message": f"added {item_id}"}

    def _complete_item(self, item_id: str) -> dict[str, Any]:
        if item_id not in self.state["items"]:
            return {"success": False, "error": f"no item {item_id}"}
        self.state["items"][item_id]["done"] = True
        return {"success": True, "message": f"completed {item_id}"}


class FakeSource:
    """EpisodeSource over FakeEpisode; `fail_on` makes that tool raise a transport error."""

    def __init__(self, admin: bool = True, fail_on: str | None = None) -> None:
        self.has_admin = admin
        self.fail_on = fail_on
        self.episodes: list[FakeEpisode] = []

    @asynccontextmanager
    async def episode(self, initial_state: dict[str, Any] | None = None) -> AsyncIterator[FakeEpisode]:
        ep = FakeEpisode(initial_state or {"items": {}, "next_id": 1}, self.has_admin, self.fail_on)
        self.episodes.append(ep)
        yield ep


class InProcessChecker:
    """Runs validators with exec in this process (test fixture only: no isolation)."""

    async def check(self, items: list[ChecklistItem], initial_state: dict[str, Any],
                    final_state: dict[str, Any]) -> list[CheckOutcome]:
        out = []
        for item in items:
            scope: dict[str, Any] = {"initial_state": copy.deepcopy(initial_state)}
            try:
                exec(item.validator or "", scope)
                ok = scope["check_func"](copy.deepcopy(final_state))
            except Exception as exc:
                out.append(CheckOutcome(id=item.id, description=item.description, status="error", reason=str(exc)))
                continue
            out.append(CheckOutcome(id=item.id, description=item.description, status="pass" if ok is True else "fail"))
        return out


def todo_scenario(task: str = "Add an item 'milk' and mark item 1 as done.") -> Scenario:
    """Two checks: an item titled milk exists; item 1 is done."""
    return Scenario(
        env_id="todo", task=task,
        initial_state={"items": {"1": {"title": "bread", "done": False}}, "next_id": 2},
        checklist=[
            ChecklistItem(id="c1", description="Has an item 'milk' been added?", validator=(
                "def check_func(final_state):\n"
                "    return any(i['title'] == 'milk' for i in final_state['items'].values())\n")),
            ChecklistItem(id="c2", description="Has item 1 been marked done?", validator=(
                "def check_func(final_state):\n    return final_state['items']['1']['done'] is True\n")),
        ],
        reference_solution=[ToolCall(tool="add_item", arguments={"title": "milk"}),
                            ToolCall(tool="complete_item", arguments={"item_id": "1"})],
        provenance=Provenance(source="hand-authored"),
    ).with_id()
