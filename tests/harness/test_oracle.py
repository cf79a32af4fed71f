"""The oracle policy replays a scenario's reference solution; `seat_for` maps the word 'oracle' to it."""

from __future__ import annotations

import pytest

from envscaler_mcp.harness.oracle import FINAL_ANSWER, USER_STOP, OraclePolicy
from envscaler_mcp.harness.seats import Seat, seat_for
from envscaler_mcp.providers import Message, Provider
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

pytestmark = pytest.mark.anyio


def scenario() -> Scenario:
    """A fixture scenario with a two-call reference solution."""
    return Scenario(env_id="shop", task="Cancel order B-77 and tell me its status.", initial_state={"orders": {}},
                    checklist=[ChecklistItem(id="c1", description="Has B-77 been cancelled?")],
                    reference_solution=[ToolCall(tool="cancel_order", arguments={"order_id": "B-77"}),
                                        ToolCall(tool="get_order", arguments={"order_id": "B-77"})],
                    provenance=Provenance(source="hand-authored"))


async def test_replays_one_call_per_turn_then_answers() -> None:
    oracle = OraclePolicy(scenario())
    history = [Message(role="user", content="Cancel order B-77 and tell me its status.")]
    seen = []
    for _ in range(3):
        turn = await oracle.complete(history)
        history.append(turn.message)
        for call in turn.message.tool_calls:
            seen.append((call.name, call.arguments))
            history.append(Message(role="tool", tool_call_id=call.id, name=call.name, content="{}"))
    assert seen == [("cancel_order", {"order_id": "B-77"}), ("get_order", {"order_id": "B-77"})]
    assert history[-1].content == FINAL_ANSWER and not history[-1].tool_calls
    assert turn.finish_reason == "stop" and turn.usage.cost_usd == 0.0


async def test_conversational_user_turns_do_not_disturb_replay() -> None:
    oracle = OraclePolicy(scenario())
    first = await oracle.complete([Message(role="user", content="hi")])
    history = [Message(role="user", content="hi"), first.message,
               Message(role="tool", tool_call_id=first.message.tool_calls[0].id, content="ok"),
               Message(role="user", content="and also check it")]
    second = await oracle.complete(history)
    assert second.message.tool_calls[0].name == "get_order"


async def test_oracle_as_simulated_user() -> None:
    user = OraclePolicy(scenario(), role="user")
    opening = await user.complete([Message(role="user", content="Hello, how can I help?")])
    assert opening.message.content == scenario().task
    closing = await user.complete([Message(role="user", content="Hello"), opening.message,
                                   Message(role="user", content="Done: B-77 is cancelled.")])
    assert closing.message.content == USER_STOP


async def test_the_word_oracle_names_the_policy_and_other_specs_name_providers() -> None:
    agent, user = seat_for("oracle"), seat_for("oracle", role="user")
    first = await agent.for_scenario(scenario()).complete([Message(role="user", content="go")])
    assert isinstance(agent.for_scenario(scenario()), OraclePolicy) and first.message.tool_calls[0].name == "cancel_order"
    opening = await user.for_scenario(scenario()).complete([Message(role="user", content="Hello")])
    assert opening.message.content == scenario().task
    assert isinstance(agent.for_scenario(scenario()), Provider)  # it speaks the seat interface
    mock = seat_for("mock")
    assert type(mock) is Seat and mock.spec == "mock" and type(mock.for_scenario(scenario())).__name__ == "MockProvider"
