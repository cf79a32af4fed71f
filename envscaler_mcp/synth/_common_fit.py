"""Fit a prompt into the model's context: render it with the richest form of its shrinkable parts, and step
down a ladder of leaner forms (fewer records, an outline of the code) until prompt and answer fit.

A prompt larger than the context is not a model's failure but the pipeline's: the embedded 1.5B model has
8,192 tokens, and the first step of every hand-written environment asked for 12,150-14,172. Token counts are an
estimate: a digit is a token, a punctuation mark 0.8, any other character 0.2. Fitted by least squares to the
embedded model's own tokenizer (Qwen2.5) on 112 prompts of ScenGenerator's steps (JSON states, Python, English;
`scripts/scen_prompt_sizes.py`), then rounded so that it never counted fewer tokens than the tokenizer: the
tokenizer found 0.77-0.95 of the estimate. Characters / 3 would not do: a state dump is about 2 characters per
token (every digit of an id, a date, an amount is one). Providers that do not say their context are not fitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envscaler_mcp.providers.base import Message

MESSAGE_OVERHEAD = 8  # chat-template tokens around each message


def estimate_text(text: str) -> int:
    """Estimated tokens of a text (on the large side; see the module's docstring)."""
    digits = sum(c.isdigit() for c in text)
    marks = sum(not c.isalnum() and not c.isspace() for c in text)
    return math.ceil(digits + 0.8 * marks + 0.2 * (len(text) - digits - marks))


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Estimated prompt tokens of a conversation (on the large side)."""
    return sum(estimate_text(m.content) + MESSAGE_OVERHEAD for m in messages)


def context_window(provider: object) -> int | None:
    """The provider's context in tokens, where it says it (the embedded model: its server's -c)."""
    value = getattr(provider, "context_tokens", None)
    return value if isinstance(value, int) and value > 0 else None


@dataclass
class Fitted:
    """A rendered prompt, its estimated size and the rung of the ladder it was rendered at (0: the richest)."""

    messages: list[Message]
    tokens: int
    rung: int


def fit_prompt(render: Callable[..., list[Message]], context: Mapping[str, Any],
               ladder: Sequence[Mapping[str, Any]], budget: int | None) -> Fitted:
    """Render `render(**context, **rung)` for the rungs of `ladder` in order (each gives the shrinkable parts
    of the prompt, from the richest form to the leanest) and return the first whose estimate is within `budget`
    (the first rung when budget is None). When none fits, the last (the leanest): the caller decides."""
    fitted = Fitted([], 0, -1)
    for rung, parts in enumerate(ladder or [{}]):
        messages = render(**{**context, **parts})
        fitted = Fitted(messages, estimate_tokens(messages), rung)
        if budget is None or fitted.tokens <= budget:
            break
    return fitted


def cut_to_fit(text: str, tokens: int) -> str:
    """`text` within an estimated `tokens`: whole when it fits, else its head and its tail around a line saying
    how much was left out (a refused answer shown back on a retry: its start and its end say most of what went
    wrong, a state or a code dump cut off by the length limit included)."""
    if estimate_text(text) <= tokens:
        return text

    def cut(keep: int) -> str:
        head, tail = text[:keep - keep // 2], text[len(text) - keep // 2:] if keep // 2 else ""
        return f"{head}\n[… {len(text) - keep} characters of this answer left out here, to fit the model's context …]\n{tail}"
    low, high = 0, len(text)  # the most characters kept whose cut fits (0 when even the notice alone does not)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if estimate_text(cut(mid)) <= tokens else (low, mid - 1)
    return cut(low)
