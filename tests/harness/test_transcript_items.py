"""Transcript items in episodes: the transcript the validators read, verdicts with evidence, and servers
without an admin plane scored on their transcript items."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.harness.checks import SandboxChecker, episode_transcript
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.external import external_warning
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.providers.base import Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance
from tests.harness.shop import BOB, SKELETON, calls, external_shop

pytestmark = pytest.mark.anyio

SAYS_TOTAL = ("from transcript_checks import says\n"
              "def check_func(transcript):\n    return says(transcript, 25.5, 'O-1001')\n")
LOOKED_UP = ("from transcript_checks import called\n"
             "def check_func(transcript):\n    return called(transcript, 'get_order', order_id='O-1001')\n")
NOTHING_CANCELLED = "def check_func(final_state):\n    return final_state == initial_state\n"
READ_ONLY = Scenario(
    env_id="mini_shop", title="Order total", task="What is the total of order O-1001?",
    initial_state=SKELETON.default_state,
    checklist=[
        ChecklistItem(id="c1", description="Has the agent told the total of O-1001 (25.50)?", validator=SAYS_TOTAL,
                      kind="transcript"),
        ChecklistItem(id="c2", description="Has the agent looked the order up?", validator=LOOKED_UP,
                      kind="transcript"),
        ChecklistItem(id="c3", description="Is every order unchanged?", validator=NOTHING_CANCELLED,
                      claims_change=False),
    ],
    reference_solution=[ToolCall(tool="get_order", arguments={"order_id": "O-1001"})],
    reference_answer="Order O-1001 totals $25.50.",
    provenance=Provenance(source="hand-authored"),
).with_id()


def test_episode_transcript_pairs_calls_with_results_in_order() -> None:
    messages = [
        Message(role="system", content="s"), Message(role="user", content="task"),
        calls(("get_order", {"order_id": "O-1"}), ("list_orders", {}), text="Let me look."),
        Message(role="tool", tool_call_id="call_1_list_orders", name="list_orders", content="not json"),
        Message(role="tool", tool_call_id="call_0_get_order", name="get_order", content='{"success": true}'),
        Message(role="assistant", content="Looked."), Message(role="user", content="now cancel it"),
        calls(("cancel_order", {"order_id": "O-1"})),
        Message(role="tool", tool_call_id="call_0_cancel_order", name="cancel_order", content="boom",
                is_error=True),
        Message(role="assistant", content="Done."),
    ]
    assert episode_transcript(messages, "Done.") == {
        "calls": [  # `turn`: the user turn each call answers
            {"name": "get_order", "arguments": {"order_id": "O-1"}, "result": {"success": True}, "is_error": False,
             "turn": 0},
            {"name": "list_orders", "arguments": {}, "result": "not json", "is_error": False, "turn": 0},
            {"name": "cancel_order", "arguments": {"order_id": "O-1"}, "result": "boom", "is_error": True,
             "turn": 1},
        ],
        "answer": "Done.",
        "told_user": ["Let me look.", "Looked.", "Done."],
    }


async def test_oracle_answers_with_the_reference_answer_and_passes(server: Any, checker: SandboxChecker) -> None:
    result = await run_episode(READ_ONLY, source=server, agent=OraclePolicy(READ_ONLY), checker=checker)
    assert result.final_answer == "Order O-1001 totals $25.50."
    assert [(c.id, c.kind, c.status) for c in result.checks] == [
        ("c1", "transcript", "pass"), ("c2", "transcript", "pass"), ("c3", "state", "pass")]
    assert result.checks[0].evidence == ["stated '25.5': \u00abOrder O-1001 totals $25.50.\u00bb",
                                         "stated 'O-1001': \u00abOrder O-1001 totals $25.50.\u00bb"]
    assert result.checks[1].evidence[0].startswith("call 1 get_order(")
    assert result.success is True and result.score == 1.0


@pytest.mark.parametrize(("turns", "failing"), [
    ([calls(("get_order", {"order_id": "O-1001"})), "Order O-1001 totals $52.50."], ["c1"]),  # a wrong amount
    (["Order O-1001 totals $25.50."], ["c2"]),  # right answer, never looked it up
    (["I cannot help with that."], ["c1", "c2"]),
])
async def test_wrong_answers_and_missing_calls_fail(server: Any, checker: SandboxChecker, turns: list[Any],
                                                    failing: list[str]) -> None:
    result = await run_episode(READ_ONLY, source=server, agent=MockProvider(turns), checker=checker)
    assert [c.id for c in result.checks if c.status == "fail"] == failing
    assert result.success is False
    missing = next(c for c in result.checks if c.id == failing[0])
    assert any(e.startswith(("missing", "no successful call")) for e in missing.evidence)


@pytest.mark.slow
async def test_external_server_scores_transcript_items_and_marks_state_items(checker: SandboxChecker) -> None:
    async with external_shop() as source:
        result = await run_episode(READ_ONLY, source=source, agent=OraclePolicy(READ_ONLY), checker=checker)
        bob = await run_episode(BOB, source=source, agent=OraclePolicy(BOB), checker=checker)
    assert [c.status for c in result.checks] == ["pass", "pass", "not_scorable"]
    assert "admin plane" in result.checks[2].reason
    assert result.scorable and result.score == 1.0 and result.success is True
    assert not bob.scorable and bob.score is None  # state items only: nothing could be scored


def test_external_warning_says_which_checks_run() -> None:
    text = external_warning([READ_ONLY, BOB])
    assert "3 state check(s)" in text and "2 transcript check(s)" in text and "will be scored" in text
    assert "no episode can be scored" in external_warning([BOB])


async def test_gym_rewards_transcript_items(server: Any, checker: SandboxChecker) -> None:
    from envscaler_mcp.adapters.gym import EnvScalerMCPEnv

    env = EnvScalerMCPEnv(server, checker)
    await env.reset(READ_ONLY)
    await env.step({"name": "get_order", "arguments": {"order_id": "O-1001"}})
    _, reward, terminated, _, info = await env.step("It totals $25.50 (order O-1001).")
    assert terminated and reward == 1.0 and info["success"] is True
    assert info["checks"][0]["evidence"][0].startswith("stated '25.5'")
    await env.reset(READ_ONLY)
    _, reward, *_ = await env.step("It totals $25.50 (order O-1001).")  # never looked it up
    assert reward == 0.5  # the answer passes, the look-up fails; the unchanged state is a guard: it earns nothing
    await env.close()
