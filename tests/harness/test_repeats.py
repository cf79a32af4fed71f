"""An episode whose model repeats the same refused call ends early as the model's failure."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.repeats import REPEATED_REFUSALS, repeated_refusal
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import BOB, calls

pytestmark = pytest.mark.anyio


def step(call_id: str, arguments: dict[str, Any], *, error: bool) -> list[Message]:
    """One agent step with one call and its result (ids as a text-parsing provider numbers them: per step)."""
    return [Message(role="assistant", tool_calls=[ToolCallRequest(id=call_id, name="find", arguments=arguments)]),
            Message(role="tool", tool_call_id=call_id, name="find", content="r", is_error=error)]


BAD = {"path": ".", "errors": "x"}


def test_three_identical_refused_steps_end_the_episode_and_fewer_do_not() -> None:
    start = [Message(role="user", content="find the test files")]
    two = start + step("textcall_0", BAD, error=True) + step("textcall_0", BAD, error=True)
    assert repeated_refusal(two) is None
    reason = repeated_refusal(two + step("textcall_0", BAD, error=True))
    assert reason is not None and reason.startswith("repeated_refused_call:") and "find" in reason
    assert REPEATED_REFUSALS == 3


@pytest.mark.parametrize("between", ["user", "answer", "other call", "success", "other arguments"])
def test_anything_else_in_between_breaks_the_run(between: str) -> None:
    middle = {"user": [Message(role="user", content="try again")],
              "answer": [Message(role="assistant", content="I could not.")],
              "other call": step("textcall_0", {"path": "/"}, error=True),
              "success": step("textcall_0", BAD, error=False),  # same call, same id, but this time it worked
              "other arguments": step("textcall_0", {**BAD, "errors": "y"}, error=True)}[between]
    messages = (step("textcall_0", BAD, error=True) + middle + step("textcall_0", BAD, error=True)
                + step("textcall_0", BAD, error=True))
    assert repeated_refusal(messages) is None


def test_a_step_with_one_refused_and_one_answered_call_is_not_a_refusal() -> None:
    calls_ = [ToolCallRequest(id="a", name="find", arguments=BAD), ToolCallRequest(id="b", name="ls", arguments={})]
    one = [Message(role="assistant", tool_calls=calls_),
           Message(role="tool", tool_call_id="a", content="r", is_error=True),
           Message(role="tool", tool_call_id="b", content="r", is_error=False)]
    assert repeated_refusal(one * 4) is None
    refused = [one[0], one[1], one[2].model_copy(update={"is_error": True})]
    assert repeated_refusal(refused * 3) is not None


def test_calls_whose_arguments_were_refused_unkept_are_never_taken_for_repeats() -> None:
    """Arguments nested too deep or too large are not kept (`arguments` is then {} whatever the model wrote), so
    three such steps are not known to be the same; refused argument text that is kept still counts."""
    def refused(arguments: dict[str, Any] | str) -> list[Message]:
        call = ToolCallRequest(id="c", name="find", arguments=arguments if isinstance(arguments, dict) else {},
                               raw_arguments=arguments if isinstance(arguments, str) else None)
        return [Message(role="assistant", tool_calls=[call]),
                Message(role="tool", tool_call_id="c", content="r", is_error=True)]
    deep: dict[str, Any] = {}
    for _ in range(100):
        deep = {"x": deep}
    unkept = refused({"path": ".", "x": deep})
    assert unkept[0].tool_calls[0].rejected is not None and unkept[0].tool_calls[0].arguments == {}
    assert repeated_refusal(unkept * 3) is None
    assert repeated_refusal(refused("{not json") * 3) is not None
    assert repeated_refusal(refused("{not json") * 2 + refused("{other")) is None


async def test_a_model_repeating_a_refused_call_ends_as_model_error_before_the_step_limit(
    server: Any, checker: SandboxChecker
) -> None:
    agent = MockProvider([calls(("cancel_order", {}))], repeat_last=True)  # missing order_id: refused each time
    result = await run_episode(BOB, source=server, agent=agent, checker=checker, config=EpisodeConfig(max_steps=30))
    assert result.status == "model_error" and result.steps == REPEATED_REFUSALS
    assert result.model_error is not None and result.model_error.startswith("repeated_refused_call:")
    assert result.tool_errors == REPEATED_REFUSALS and result.success is False and result.scorable


async def test_a_refused_call_fixed_after_two_tries_goes_on(server: Any, checker: SandboxChecker) -> None:
    agent = MockProvider([calls(("cancel_order", {})), calls(("cancel_order", {})),
                          calls(("cancel_order", {"order_id": "O-1002"})), "Done."])
    result = await run_episode(BOB, source=server, agent=agent, checker=checker)
    assert result.status == "completed" and result.tool_errors == 2 and result.model_error is None
