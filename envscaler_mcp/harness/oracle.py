"""The oracle policy: replays a scenario's reference solution, one tool call per turn, then answers with the
scenario's reference answer ("Task Completed" when it has none). As a simulated user it states the whole
task at once (a multi-turn scenario: each turn's message, one per agent reply), then ends the conversation.
On a multi-turn scenario the agent replays each turn's reference calls after that turn's message, then gives
the turn's answer.

It is not a model: it is bound to one scenario and speaks the provider interface (`complete`, `aclose`)
only so that the episode loop can drive it like any seat. `--agent oracle` / `--user oracle` select it
(harness.seats.seat_for).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from envscaler_mcp._usage import Usage
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolCallRequest, ToolDef
from envscaler_mcp.scenario.models import Scenario, ToolCall

ORACLE = "oracle"
FINAL_ANSWER = "Task Completed"
USER_STOP = "###STOP###"


class OraclePolicy:
    """Agent seat (`role="agent"`) or simulated-user seat (`role="user"`) driven by a scenario.

    The agent counts the tool calls already in the conversation to find the next reference call, so it
    also works when a conversational user speaks between calls. `solution` replaces the scenario's
    reference solution (e.g. a deliberately wrong one).
    """

    def __init__(self, scenario: Scenario, *, solution: Sequence[ToolCall] | None = None,
                 role: Literal["agent", "user"] = "agent") -> None:
        self.spec = ORACLE
        self.role = role
        self.task = scenario.task
        self.answer = scenario.reference_answer or FINAL_ANSWER
        self.solution = list(solution if solution is not None else scenario.reference_solution)
        self.turns = scenario.turns if solution is None else []

    def _turn_message(self, messages: Sequence[Message]) -> Message:
        """A multi-turn scenario: the current turn's reference calls (the turn = the user messages so far),
        then the turn's answer."""
        users = [n for n, m in enumerate(messages) if m.role == "user"]
        k = min(max(len(users) - 1, 0), len(self.turns) - 1)
        since = messages[users[-1] + 1:] if users else messages
        done = sum(len(m.tool_calls) for m in since if m.role == "assistant")
        turn = self.turns[k]
        if done < len(turn.reference):
            step = turn.reference[done]
            call = ToolCallRequest(id=f"oracle_{k}_{done}", name=step.tool, arguments=dict(step.arguments))
            return Message(role="assistant", tool_calls=[call])
        last = k == len(self.turns) - 1
        return Message(role="assistant", content=turn.answer or (self.answer if last else FINAL_ANSWER))

    def _agent_message(self, messages: Sequence[Message]) -> Message:
        if self.turns:
            return self._turn_message(messages)
        done = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
        if done < len(self.solution):
            step = self.solution[done]
            call = ToolCallRequest(id=f"oracle_{done}", name=step.tool, arguments=dict(step.arguments))
            return Message(role="assistant", tool_calls=[call])
        return Message(role="assistant", content=self.answer)

    def _user_message(self, messages: Sequence[Message]) -> Message:
        spoken = sum(1 for m in messages if m.role == "assistant")
        said = [turn.user for turn in self.turns] or [self.task]
        return Message(role="assistant", content=said[spoken] if spoken < len(said) else USER_STOP)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
        settings: GenerationSettings | None = None,
    ) -> AssistantTurn:
        """The next reference call, the reference answer, or the simulated user's line."""
        message = self._agent_message(messages) if self.role == "agent" else self._user_message(messages)
        return AssistantTurn(message=message, usage=Usage(cost_usd=0.0, calls=1),
                             finish_reason="tool_calls" if message.tool_calls else "stop", model=self.spec)

    async def aclose(self) -> None:
        """Nothing to release."""
