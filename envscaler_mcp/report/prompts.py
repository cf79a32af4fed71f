"""The system prompts of a run's episodes, each distinct one shown once on the HTML page.

Every episode of an environment starts from the same system prompt (the environment's description and its
rules: about 2.8 kB on a catalog environment), and the page showed it in every episode's transcript: 28 % of a
10,000-episode page. The pass that summarizes the run registers each episode's system prompt here; the page
then shows each distinct prompt once, in its own section, and each transcript links to it. What is kept is
bounded: at most MAX_PROMPTS prompts and MAX_BYTES of their text (in characters); a prompt met after that stays in its
transcripts, as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from envscaler_mcp.providers.base import Message

MAX_PROMPTS = 2000
MAX_BYTES = 16 << 20
_ENVS_NAMED = 3  # environments named beside a prompt; the others are counted


@dataclass
class SharedPrompt:
    """One distinct system prompt: its anchor on the page, its text, and where it was used."""

    anchor: str
    text: str
    episodes: int = 0
    envs: set[str] = field(default_factory=set)

    def used_in(self) -> str:
        """'3 episodes of env_a, env_b'; '... and 4 other environments' past the first few."""
        named = sorted(self.envs)
        names = ", ".join(named[:_ENVS_NAMED])
        others = len(named) - _ENVS_NAMED
        more = f" and {others} other environment{'s' * (others != 1)}" if others > 0 else ""
        return f"{self.episodes} episode{'s' * (self.episodes != 1)} of {names}{more}"


class PromptIndex:
    """The distinct system prompts of a run; each one's anchor is made from its text (the same prompt has the same
    anchor in every run's page)."""

    def __init__(self, max_prompts: int = MAX_PROMPTS, max_bytes: int = MAX_BYTES) -> None:
        self._by_digest: dict[bytes, SharedPrompt] = {}
        self._max_prompts = max_prompts
        self._room = max_bytes

    def add(self, env_id: str, messages: Iterable[Message]) -> None:
        """Register the system prompt(s) of one episode."""
        for m in messages:
            if m.role != "system" or not m.content:
                continue
            digest = _digest(m.content)
            prompt = self._by_digest.get(digest)
            if prompt is None:
                size = len(m.content)
                if len(self._by_digest) >= self._max_prompts or size > self._room:
                    continue
                self._room -= size
                prompt = self._by_digest[digest] = SharedPrompt(f"prompt-{digest.hex()[:16]}", m.content)
            prompt.episodes += 1
            prompt.envs.add(env_id)

    def anchor_of(self, text: str) -> str | None:
        """The page anchor of a registered prompt; None for one shown in its transcript."""
        prompt = self._by_digest.get(_digest(text))
        return None if prompt is None else prompt.anchor

    def __iter__(self) -> Iterator[SharedPrompt]:
        """The prompts by the first environment that used them (then by anchor): the same order for the same
        results, whatever order the episodes finished in."""
        return iter(sorted(self._by_digest.values(), key=lambda p: (min(p.envs), p.anchor)))

    def __len__(self) -> int:
        return len(self._by_digest)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()

