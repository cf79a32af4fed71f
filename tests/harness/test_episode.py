"""The agent loop of one episode, on the in-process to-do fixture with scripted (mock) agents."""

from __future__ import annotations

import anyio
import pytest

from envscaler_mcp.errors import ProviderError
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.prompts import STOP_TOKEN, EnvInfo
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider, tool_call
from tests.harness.fakes import FakeSource, InProcessChecker, todo_scenario

pytestmark = pytest.mark.anyio


def _calls(*calls: ToolCallRequest, text: str = "") -> Message:
    return Message(role="assistant", content=text, tool_calls=list(calls))


async def test_solving_agent_scores_full_marks() -> None:
    agent = MockProvider([_calls(tool_call("list_items")),
                          _calls(tool_call("add_item", {"title": "milk"}), tool_call("complete_item", {"item_id": "1"})),
                          "Done: added milk and completed bread."])
    source = FakeSource()
    result = await run_episode(todo_scenario(), source=source, agent=agent, checker=InProcessChecker(),
                               env_info=EnvInfo(name="To-do", introduction="A list.", rules=["Be nice."]))
    assert result.status == "completed" and result.score == 1.0 and result.success is True
    assert result.steps == 3 and result.tool_calls == 3 and result.tool_errors == 0
    assert [c for c, _ in source.episodes[0].calls] == ["list_items", "add_item", "complete_item"]
    roles = [m.role for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "tool", "assistant"]
    system = result.messages[0].content
    assert "Be nice." in system and "A list." in system
    assert result.messages[1].content == todo_scenario().task
    assert result.diff["items"]["1"]["done"] == {"changed": {"old": False, "new": True}}
    assert result.final_answer.startswith("Done")
    assert {t.kind for t in result.timings} >= {"setup", "agent", "tool", "state", "validate"}
    # the agent saw every tool and the tool results (tools offered on each call)
    assert [t.name for t in agent.requests[0][1]] == ["list_items", "add_item", "complete_item"]


async def test_agent_that_does_nothing_scores_zero() -> None:
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=MockProvider(["I did it."]),
                               checker=InProcessChecker())
    assert result.status == "completed" and result.score == 0.0 and result.success is False
    assert result.diff == {}


async def test_wrong_but_plausible_agent_loses_exactly_the_wrong_check() -> None:
    agent = MockProvider([_calls(tool_call("add_item", {"title": "milk"}), tool_call("complete_item", {"item_id": "2"})),
                          "Done."])
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, checker=InProcessChecker())
    assert {c.id: c.status for c in result.checks} == {"c1": "pass", "c2": "fail"}
    assert result.score == 0.5 and result.success is False


async def test_model_mistakes_become_error_results_the_agent_can_recover_from() -> None:
    bad_json = ToolCallRequest(id="x1", name="add_item", arguments={}, raw_arguments="{title: milk")
    agent = MockProvider([
        _calls(bad_json, tool_call("delete_everything"), tool_call("complete_item", {"item_id": "99"}),
               tool_call("add_item", {"name": "milk"})),
        _calls(tool_call("add_item", {"title": "milk"}), tool_call("complete_item", {"item_id": "1"})),
        "ok",
    ])
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, checker=InProcessChecker())
    tool_msgs = [m for m in result.messages if m.role == "tool"]
    assert [m.is_error for m in tool_msgs] == [True, True, True, True, False, False]
    assert "not a JSON object" in tool_msgs[0].content
    assert "Unknown tool 'delete_everything'" in tool_msgs[1].content and "add_item" in tool_msgs[1].content
    assert "no item 99" in tool_msgs[2].content
    assert result.tool_errors == 4 and result.score == 1.0 and result.success is True
    # the second agent call saw the error results
    second_request = agent.requests[1][0]
    assert sum(m.is_error for m in second_request if m.role == "tool") == 4


async def test_step_limit_stops_a_looping_agent() -> None:
    agent = MockProvider([_calls(tool_call("list_items"))], repeat_last=True)
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, checker=InProcessChecker(),
                               config=EpisodeConfig(max_steps=4))
    assert result.status == "max_steps" and result.steps == 4 and result.success is False
    assert result.score == 0.0


class _SlowAfterFirst(MockProvider):
    async def complete(self, messages, tools=None, settings=None):
        if self.requests:
            await anyio.sleep(10)
        return await super().complete(messages, tools, settings)


async def test_episode_timeout_is_recorded_and_the_state_still_scored() -> None:
    agent = _SlowAfterFirst([_calls(tool_call("add_item", {"title": "milk"})), "never"])
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, checker=InProcessChecker(),
                               config=EpisodeConfig(timeout_s=0.3))
    assert result.status == "timeout" and result.score == 0.5 and result.success is False


async def test_provider_error_is_an_infra_error_retried_then_recorded() -> None:
    agent = MockProvider([])  # raises ProviderError on the first call
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, checker=InProcessChecker(),
                               config=EpisodeConfig(infra_retries=2))
    assert result.status == "infra_error" and result.attempts == 3
    assert result.score is None and result.success is None
    assert result.infra_reason is not None and result.infra_reason.count("ProviderError") == 3


async def test_transport_failure_is_retried_and_a_later_success_kept() -> None:
    calls = {"n": 0}

    def flaky(messages, tools):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ProviderError("HTTP 503 after 5 retries")
        return "nothing to do"

    result = await run_episode(todo_scenario(), source=FakeSource(), agent=MockProvider([flaky], repeat_last=True),
                               checker=InProcessChecker())
    assert result.status == "completed" and result.attempts == 2 and result.score == 0.0


async def test_server_crash_mid_episode_is_infra() -> None:
    agent = MockProvider([_calls(tool_call("add_item", {"title": "milk"}))], repeat_last=True)
    result = await run_episode(todo_scenario(), source=FakeSource(fail_on="add_item"), agent=agent,
                               checker=InProcessChecker(), config=EpisodeConfig(infra_retries=1))
    assert result.status == "infra_error" and "ConnectionError" in (result.infra_reason or "")


async def test_server_without_admin_plane_is_not_scorable() -> None:
    result = await run_episode(todo_scenario(), source=FakeSource(admin=False), agent=MockProvider(["hi"]),
                               checker=InProcessChecker())
    assert result.status == "completed" and result.scorable is False
    assert result.score is None and result.success is None
    assert {c.status for c in result.checks} == {"not_scorable"}
    assert "admin plane" in result.checks[0].reason


async def test_conversation_mode_with_a_scripted_user() -> None:
    user = MockProvider(["I need to add milk to my list.", "Also please mark item 1 as done.", f"Thanks! {STOP_TOKEN}"])
    agent = MockProvider([
        _calls(tool_call("add_item", {"title": "milk"})),
        "Added milk. Anything else?",
        _calls(tool_call("complete_item", {"item_id": "1"})),
        "Item 1 is done.",
    ])
    result = await run_episode(todo_scenario(), source=FakeSource(), agent=agent, user=user,
                               checker=InProcessChecker(), config=EpisodeConfig(mode="conversation"))
    assert result.status == "completed" and result.success is True and result.user_model == "mock"
    assert result.messages[1] == Message(role="user", content="I need to add milk to my list.")
    # the simulated user holds the task, and saw only the agent's text, never tool calls or results
    user_view = user.requests[-1][0]
    assert todo_scenario().task in user_view[0].content
    assert [m.content for m in user_view if m.role == "user"][1:] == ["Added milk. Anything else?", "Item 1 is done."]
    assert all(not m.tool_calls for m in user_view) and user.requests[0][1] == []
    assert result.user_messages[-1].content.endswith(STOP_TOKEN)
    assert result.user_usage.calls == 3 and result.agent_usage.calls == 4


async def test_conversation_mode_needs_a_user() -> None:
    from envscaler_mcp.errors import UsageError

    with pytest.raises(UsageError, match="--user"):
        await run_episode(todo_scenario(), source=FakeSource(), agent=MockProvider(["x"]), checker=InProcessChecker(),
                          config=EpisodeConfig(mode="conversation"))
