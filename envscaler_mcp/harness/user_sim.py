"""The simulated user of conversational mode: an LLM seat holding the task, seeing only the agent's text."""

from __future__ import annotations

from envscaler_mcp._usage import Usage
from envscaler_mcp.harness.prompts import STOP_TOKEN, USER_OPENING, user_system_prompt
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, Provider
from envscaler_mcp.scenario.models import Scenario


class SimulatedUser:
    """Talks to the agent on behalf of a person with a goal.

    Its own transcript has inverted roles (the agent's words are `user` messages, its own replies are
    `assistant` messages), so any chat model can play it. It never sees tool calls or tool results.
    """

    def __init__(self, provider: Provider, task: str, settings: GenerationSettings | None = None) -> None:
        self.provider = provider
        self.settings = settings or GenerationSettings(temperature=0.7)
        self.messages: list[Message] = [
            Message(role="system", content=user_system_prompt(task)),
            Message(role="user", content=USER_OPENING),
        ]
        self.usage = Usage()
        self.stopped = False

    async def first_message(self) -> str:
        """The user's opening message (its answer to the agent's greeting)."""
        return await self._reply()

    async def respond(self, agent_text: str) -> str:
        """Pass the agent's text to the user; return the user's reply (STOP_TOKEN when the user is done)."""
        self.messages.append(Message(role="user", content=agent_text))
        return await self._reply()

    async def _reply(self) -> str:
        turn = await self.provider.complete(list(self.messages), None, self.settings)
        self.usage = self.usage + turn.usage
        raw = (turn.message.content or "").strip()
        self.messages.append(Message(role="assistant", content=raw))
        if STOP_TOKEN in raw:
            self.stopped = True
            return STOP_TOKEN
        return raw


SCRIPTED = "scripted"


class ScriptedSeat:
    """The provider-shaped placeholder of `--user scripted`: the episode loop sees its spec and drives a
    ScriptedUser instead; it is never asked to complete anything."""

    spec = SCRIPTED

    async def complete(self, *args: object, **kwargs: object) -> AssistantTurn:
        raise RuntimeError("the scripted user is driven by the episode loop, not asked for completions")

    async def aclose(self) -> None:
        """Nothing to release."""


def turn_messages(scenario: Scenario) -> list[str]:
    """What a scripted user says, in order: each turn's message, or the task of a single-turn scenario."""
    return [turn.user for turn in scenario.turns] or [scenario.task]


class ScriptedUser:
    """The scripted user seat: reveals a scenario's turns verbatim, one per agent reply, with no model.

    A scenario without turns has one: its task. After the last turn the user stops (STOP_TOKEN). It has the
    same surface as SimulatedUser, so the episode loop drives both alike."""

    spec = SCRIPTED

    def __init__(self, turns: list[str]) -> None:
        self.turns = turns
        self.revealed = 0
        self.messages: list[Message] = []  # no model, so no transcript of its own
        self.usage = Usage()
        self.stopped = False

    async def first_message(self) -> str:
        """The first turn's message."""
        return self._next()

    async def respond(self, agent_text: str) -> str:
        """The next turn's message, or STOP_TOKEN after the last turn."""
        return self._next()

    def _next(self) -> str:
        if self.revealed >= len(self.turns):
            self.stopped = True
            return STOP_TOKEN
        self.revealed += 1
        return self.turns[self.revealed - 1]
