"""The simulated user of conversational mode: an LLM seat holding the task, seeing only the agent's text."""

from __future__ import annotations

from envscaler_mcp._usage import Usage
from envscaler_mcp.harness.prompts import STOP_TOKEN, USER_OPENING, user_system_prompt
from envscaler_mcp.providers.base import GenerationSettings, Message, Provider


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
