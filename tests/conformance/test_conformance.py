"""Conformance of every generated server (and the fixture) over memory, stdio, HTTP and the pipe.

Each test opens at most one episode per (server, transport) so the stdio runs stay few.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.launch.episodes import AdminGetState, AdminParams, AdminResult
from envscaler_mcp.launch.servers import HttpServer
from tests.conformance.schema_args import mistyped, sample_arguments
from tests.conformance.subjects import FIXTURE, MINI_SHOP, Subject

pytestmark = pytest.mark.anyio


def _dump(state: dict[str, Any]) -> str:
    return json.dumps(state)


def _few_stdio(launched: LaunchedServer, subject: Subject) -> None:
    """Skip on stdio for bundled servers: a process per episode costs about 1 s, so over stdio a bundled
    server runs only the fidelity test (which also checks the tool list); the fixtures run every check
    (the runtime code is the same file in every server)."""
    if launched.transport == "stdio" and subject.name not in (FIXTURE, MINI_SHOP):
        pytest.skip("stdio: covered by the fixture server and by memory/http for this server")


def _start_state(subject: Subject) -> dict[str, Any]:
    return subject.scenarios[0].initial_state if subject.scenarios else subject.default_state


async def test_tools_are_the_skeleton_tools(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    spec = subject.spec
    async with launched.episode() as ep:
        tools = await ep.list_tools()
        prompts = (await ep.client.list_prompts()).prompts
    assert [t.name for t in tools] == [t["name"] for t in spec["tools"]]
    for tool, expected in zip(tools, spec["tools"], strict=True):
        assert tool.input_schema == expected["input_schema"]
        assert tool.description == expected["description"]
        assert tool.output_schema is None
        assert tool.annotations is not None
        if expected["kind"] == "query":
            assert tool.annotations.read_only_hint is True
        else:
            assert tool.annotations.read_only_hint is False and tool.annotations.destructive_hint is True
    assert not any("admin" in t.name or "/" in t.name for t in tools)
    assert sorted(p.name for p in prompts) == sorted(s.id for s in subject.scenarios)


async def test_state_round_trip_and_resource(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    state = _start_state(subject)
    async with launched.episode(state) as ep:
        got = await ep.get_state()
        resource = await ep.client.read_resource("state://current")
        if subject.scenarios:
            prompt = await ep.client.get_prompt(subject.scenarios[0].id)
            assert prompt.messages[0].content.text == subject.scenarios[0].task  # type: ignore[union-attr]
    assert got == state
    for key in state:
        assert _dump(got[key]) == _dump(state[key])  # same key order all the way down
    assert json.loads(resource.contents[0].text) == state  # type: ignore[union-attr]


async def test_bad_input_is_an_error_result_and_changes_nothing(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    tools = subject.spec["tools"]
    with_required = [t for t in tools if t["input_schema"].get("required")]
    async with launched.episode(_start_state(subject)) as ep:
        before = _dump(await ep.get_state())
        results = [("unknown tool", await ep.call_tool("no_such_tool", {}))]
        for tool in with_required[:3]:
            schema = tool["input_schema"]
            args = sample_arguments(schema)
            if args is None:
                continue
            results.append((f"{tool['name']} missing", await ep.call_tool(tool["name"], {})))
            if schema.get("additionalProperties") is False:
                results.append((f"{tool['name']} extra",
                                await ep.call_tool(tool["name"], {**args, "zz_unexpected": 1})))
            first = schema["required"][0]
            wrong = mistyped(schema.get("properties", {}).get(first, {}))
            if wrong is not None:
                results.append((f"{tool['name']} mistyped", await ep.call_tool(tool["name"], {**args, first: wrong})))
        after = _dump(await ep.get_state())
    assert len(results) >= 2 or not with_required
    for label, result in results:
        assert result.is_error, label
        text = result.content[0].text  # type: ignore[union-attr]
        assert ("Unknown tool" in text) if label == "unknown tool" else ("Invalid arguments" in text), (label, text)
    assert after == before


async def test_failed_state_changes_leave_the_state_identical(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    changers = [t for t in subject.spec["tools"] if t["kind"] == "state_change"]
    failures = 0
    async with launched.episode(_start_state(subject)) as ep:
        for tool in changers:
            args = sample_arguments(tool["input_schema"])
            if args is None:
                continue
            before = _dump(await ep.get_state())
            result = await ep.call_tool(tool["name"], args)
            value = read_result(result).value
            if result.is_error or value.get("success") is False:
                failures += 1
                assert _dump(await ep.get_state()) == before, tool["name"]
    assert failures > 0 or not changers, "no state-changing call failed: the check exercised nothing"


async def test_exceptions_in_environment_code_are_error_results(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    # Replace every container in the state with None: tools that touch the state then raise.
    broken = {k: (None if isinstance(v, (dict, list)) else v) for k, v in subject.default_state.items()}
    raised = 0
    async with launched.episode(broken) as ep:
        for tool in subject.spec["tools"]:
            args = sample_arguments(tool["input_schema"])
            if args is None:
                continue
            result = await ep.call_tool(tool["name"], args)
            if result.is_error:
                raised += 1
                assert "failed with" in result.content[0].text  # type: ignore[union-attr]
        assert await ep.get_state() == broken
    assert raised > 0


@pytest.mark.parametrize("subject", [FIXTURE], indirect=True)  # needs the fixture's misbehaving tools
async def test_fixture_rollback_after_partial_changes(launched: LaunchedServer, subject: Subject) -> None:
    async with launched.episode() as ep:
        start = _dump(await ep.get_state())
        for mode in ("raise", "rebind", "loop"):
            result = await ep.call_tool("break_things", {"mode": mode})
            assert result.is_error, mode
            expected = "took longer than" if mode == "loop" else "ValueError: broken on purpose"
            assert expected in result.content[0].text  # type: ignore[union-attr]
            assert _dump(await ep.get_state()) == start, mode
        short = await ep.call_tool("place_order", {"item_id": "i2", "quantity": 5})  # changes, then fails
        assert read_result(short).value == {"success": False, "error": "not enough stock"}
        assert _dump(await ep.get_state()) == start
        ok = await ep.call_tool("place_order", {"item_id": "i2", "quantity": 1})
        assert read_result(ok).value["success"] is True  # type: ignore[index]
        state = await ep.get_state()
        assert state["items"]["i2"]["stock"] == 0 and state["orders"]["o1"]["lines"] == ["i2"]
        added = await ep.call_tool("add_item", {"item_id": "i7", "name": "Jar", "price": 2})
        assert not added.is_error
        assert (await ep.get_state())["items"]["i7"] == {"item_id": "i7", "name": "Jar", "price": 2, "stock": 0}

@pytest.mark.parametrize("subject", [FIXTURE], indirect=True)
async def test_a_result_carries_its_structured_copy_unless_the_call_asks_for_text_only(
        launched: LaunchedServer, subject: Subject) -> None:
    """A client that does not ask gets the result's JSON twice (text and `structuredContent`, the server
    contract); the harness asks for the text alone, and gets the same text. Errors never carry structured
    content. Run on every transport."""
    async with launched.episode() as ep:
        both = await ep.call_tool("place_order", {"item_id": "i2", "quantity": 5}, text_only=False)
        alone = await ep.call_tool("place_order", {"item_id": "i2", "quantity": 5})
        assert both.structured_content == {"success": False, "error": "not enough stock"}
        assert alone.structured_content is None
        assert both.content[0].text == alone.content[0].text  # type: ignore[union-attr]
        assert json.loads(both.content[0].text) == both.structured_content  # type: ignore[union-attr]
        for text_only in (False, True):
            error = await ep.call_tool("break_things", {"mode": "raise"}, text_only=text_only)
            assert error.is_error and error.structured_content is None



async def test_admin_plane_needs_the_token(launched: LaunchedServer, subject: Subject) -> None:
    _few_stdio(launched, subject)
    if isinstance(launched, HttpServer):
        async with httpx2.AsyncClient(base_url=launched.url) as raw:
            assert (await raw.get("/admin/episodes")).status_code == 401
            wrong = {"Authorization": "Bearer wrong"}
            assert (await raw.get("/admin/episodes/default/state", headers=wrong)).status_code == 401
            assert (await raw.post("/admin/episodes", json={}, headers=wrong)).status_code == 401
        return
    async with launched.episode() as ep:
        with pytest.raises(MCPError, match=r"refused|disabled"):
            await ep.client.session.send_request(AdminGetState(params=AdminParams(token="wrong")), AdminResult)


@pytest.mark.parametrize("launched", ["http"], indirect=True)  # concurrent episodes in one process
async def test_http_episodes_are_isolated(launched: LaunchedServer, subject: Subject) -> None:
    if not subject.scenarios or not subject.scenarios[0].reference_solution:
        pytest.skip("needs a scenario with a reference solution")
    scenario = subject.scenarios[0]
    async with launched.episode(scenario.initial_state) as busy, launched.episode(scenario.initial_state) as idle:
        async def replay() -> None:
            for call in scenario.reference_solution:
                await busy.call_tool(call.tool, call.arguments)

        async def read() -> None:
            for _ in range(len(scenario.reference_solution)):
                assert await idle.get_state() == scenario.initial_state

        async with anyio.create_task_group() as tg:
            tg.start_soon(replay)
            tg.start_soon(read)
        assert await idle.get_state() == scenario.initial_state
        assert await busy.get_state() != scenario.initial_state
