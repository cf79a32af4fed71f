"""One episode on the mini_shop server (in memory) with the real validator sandbox and scripted agents."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from envscaler_mcp.errors import ProviderError, UsageError
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.prompts import STOP_TOKEN
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import (
    ALICE,
    BOB,
    ENV_INFO,
    SKELETON,
    CrashingSource,
    calls,
    external_shop,
    replay_agent,
)

pytestmark = pytest.mark.anyio


async def test_solving_agent_scores_full_marks(server: Any, checker: SandboxChecker) -> None:
    agent = MockProvider(
        [
            calls(("get_order", {"order_id": "O-1002"}), reasoning="Look it up first."),
            calls(
                ("cancel_order", {"order_id": "O-1002"}),
                ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"}),
            ),
            "Cancelled O-1002 and added the note.",
        ]
    )
    result = await run_episode(BOB, source=server, agent=agent, checker=checker, env_info=ENV_INFO)
    assert result.status == "completed" and result.score == 1.0 and result.success is True
    assert result.steps == 3 and result.tool_calls == 3 and result.tool_errors == 0
    assert [m.role for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    system = result.messages[0].content
    assert SKELETON.introduction in system and SKELETON.rules[0] in system and "plain text" in system
    assert result.messages[1].content == BOB.task and result.messages[2].reasoning == "Look it up first."
    assert "O-1002" in result.messages[3].content  # the tool result text reached the transcript
    assert ("orders", "O-1002", "status") in {tuple(c.path) for c in result.diff if c.op == "changed"}
    assert [c.status for c in result.checks] == ["pass", "pass"]
    assert {t.kind for t in result.timings} >= {"setup", "agent", "tool", "state", "validate"}
    # the agent was offered exactly the server's tools, every turn
    assert [t.name for t in agent.requests[0][1]] == [t.name for t in SKELETON.tools]


async def test_agent_that_does_nothing_scores_zero(server: Any, checker: SandboxChecker) -> None:
    result = await run_episode(BOB, source=server, agent=MockProvider(["All done!"]), checker=checker)
    assert result.status == "completed" and result.score == 0.0 and result.success is False
    assert result.diff == [] and result.tool_calls == 0


async def test_wrong_but_plausible_agent_loses_exactly_the_wrong_check(
    server: Any, checker: SandboxChecker
) -> None:
    agent = MockProvider(
        [
            calls(("list_orders", {"customer": "alice"})),
            calls(
                ("cancel_order", {"order_id": "O-1001", "reason": "relocating"}),
                ("cancel_order", {"order_id": "O-1004", "reason": "relocating"}),
            ),
            "Cancelled both pending orders.",
        ]
    )
    result = await run_episode(ALICE, source=server, agent=agent, checker=checker)
    assert {c.id: c.status for c in result.checks} == {"c1": "pass", "c2": "pass", "c3": "fail", "c4": "pass"}
    assert [c.at_start for c in result.checks] == [False, False, False, True]  # c4 (O-1003 untouched): a guard
    assert result.score == 0.6667 and result.success is False  # 2 of the 3 goals


async def test_model_mistakes_become_error_results_the_agent_can_recover_from(
    server: Any, checker: SandboxChecker
) -> None:
    bad_json = ToolCallRequest(id="x1", name="cancel_order", arguments={}, raw_arguments="{order_id: O-1002")
    agent = MockProvider(
        [
            Message(role="assistant", tool_calls=[bad_json]),
            calls(
                ("delete_order", {"order_id": "O-1002"}),
                ("cancel_order", {"order_id": "O-1003"}),
                ("cancel_order", {}),
            ),
            calls(
                ("cancel_order", {"order_id": "O-1002"}),
                ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"}),
            ),
            "Done.",
        ]
    )
    result = await run_episode(BOB, source=server, agent=agent, checker=checker)
    tool_msgs = [m for m in result.messages if m.role == "tool"]
    assert [m.is_error for m in tool_msgs] == [True, True, False, True, False, False]
    assert "not a JSON object" in tool_msgs[0].content
    assert "Unknown tool 'delete_order'" in tool_msgs[1].content and "cancel_order" in tool_msgs[1].content
    assert "shipped" in tool_msgs[2].content  # a {"success": false} result: not an error result, but visible
    assert "order_id" in tool_msgs[3].content  # schema violation reported by the server
    assert result.tool_errors == 3 and result.score == 1.0 and result.success is True
    assert sum(m.is_error for m in agent.requests[2][0] if m.role == "tool") == 3  # the agent saw the errors


async def test_step_limit_stops_a_looping_agent(server: Any, checker: SandboxChecker) -> None:
    agent = MockProvider([calls(("get_order", {"order_id": "O-1002"}))], repeat_last=True)
    result = await run_episode(
        BOB, source=server, agent=agent, checker=checker, config=EpisodeConfig(max_steps=4)
    )
    assert (
        result.status == "max_steps" and result.steps == 4 and result.success is False and result.score == 0.0
    )


class _SlowAfterFirst(MockProvider):
    async def complete(self, messages, tools=None, settings=None):  # type: ignore[no-untyped-def]
        if self.requests:
            await anyio.sleep(30)
        return await super().complete(messages, tools, settings)


async def test_episode_timeout_is_recorded_and_the_state_still_scored(
    server: Any, checker: SandboxChecker
) -> None:
    agent = _SlowAfterFirst([calls(("cancel_order", {"order_id": "O-1002"})), "never"])
    result = await run_episode(
        BOB, source=server, agent=agent, checker=checker, config=EpisodeConfig(timeout_s=0.5)
    )
    assert result.status == "timeout" and result.score == 0.5 and result.success is False


async def test_provider_error_is_an_infra_error_retried_then_recorded(
    server: Any, checker: SandboxChecker
) -> None:
    agent = MockProvider([])  # raises ProviderError on its first call
    result = await run_episode(
        BOB,
        source=server,
        agent=agent,
        checker=checker,
        config=EpisodeConfig(infra_retries=2, infra_backoff_s=0),
    )
    assert result.status == "infra_error" and result.attempts == 3
    assert result.score is None and result.success is None and result.checks == []
    assert (result.infra_reason or "").count("ProviderError") == 3


async def test_a_transient_failure_is_retried_and_the_later_success_kept(
    server: Any, checker: SandboxChecker
) -> None:
    seen = {"n": 0}

    def flaky(messages: list[Message], tools: list[Any]) -> str:
        seen["n"] += 1
        if seen["n"] == 1:
            raise ProviderError("HTTP 503 after 5 retries")
        return "Nothing to do."

    result = await run_episode(
        BOB,
        source=server,
        agent=MockProvider([flaky], repeat_last=True),
        checker=checker,
        config=EpisodeConfig(infra_backoff_s=0.01),
    )
    assert result.status == "completed" and result.attempts == 2 and result.score == 0.0


async def test_server_crash_mid_episode_is_infra(server: Any, checker: SandboxChecker) -> None:
    agent = MockProvider([calls(("cancel_order", {"order_id": "O-1002"}))], repeat_last=True)
    result = await run_episode(
        BOB,
        source=CrashingSource(server, "cancel_order"),
        agent=agent,
        checker=checker,
        config=EpisodeConfig(infra_retries=1, infra_backoff_s=0),
    )
    assert result.status == "infra_error" and result.attempts == 2
    assert "ConnectionResetError" in (result.infra_reason or "")


async def test_conversation_mode_with_a_scripted_user(server: Any, checker: SandboxChecker) -> None:
    user = MockProvider(
        [
            "Hi, I'm Bob. Please cancel my order.",
            "It's O-1002. Also add the note 'Customer changed mind'.",
            f"Thanks, that's all. {STOP_TOKEN}",
        ]
    )
    agent = MockProvider(
        [
            "Sure, which order is it?",
            calls(
                ("cancel_order", {"order_id": "O-1002"}),
                ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"}),
            ),
            "Order O-1002 is cancelled and the note is added. Anything else?",
        ]
    )
    result = await run_episode(
        BOB, source=server, agent=agent, user=user, checker=checker, config=EpisodeConfig(mode="conversation")
    )
    assert result.status == "completed" and result.success is True and result.user_model == "mock"
    assert result.messages[1] == Message(role="user", content="Hi, I'm Bob. Please cancel my order.")
    user_view = user.requests[-1][0]
    assert BOB.task in user_view[0].content and STOP_TOKEN in user_view[0].content  # the user holds the task
    assert [m.content for m in user_view if m.role == "user"][1:] == [
        "Sure, which order is it?",
        "Order O-1002 is cancelled and the note is added. Anything else?",
    ]
    assert all(not m.tool_calls and m.role != "tool" for m in user_view) and user.requests[0][1] == []
    assert result.user_messages[-1].content.endswith(STOP_TOKEN)
    assert result.user_usage.calls == 3 and result.agent_usage.calls == 3


async def test_conversation_mode_needs_a_user(server: Any, checker: SandboxChecker) -> None:
    with pytest.raises(UsageError, match="--user"):
        await run_episode(
            BOB,
            source=server,
            agent=MockProvider(["x"]),
            checker=checker,
            config=EpisodeConfig(mode="conversation"),
        )


@pytest.mark.slow
async def test_external_stdio_server_runs_but_is_not_scorable(checker: SandboxChecker) -> None:
    async with external_shop() as source:
        result = await run_episode(BOB, source=source, agent=replay_agent(BOB), checker=checker)
    assert result.status == "completed" and result.tool_calls == 3 and result.tool_errors == 0
    assert result.scorable is False and result.score is None and result.success is None
    assert {c.status for c in result.checks} == {"not_scorable"} and "admin plane" in result.checks[0].reason
