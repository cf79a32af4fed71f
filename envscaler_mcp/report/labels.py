"""The embedded local model's decision labels, told apart from reasoning.

The local model (`local/...`) writes a one-line `plan` before each decision because its answer grammar asks
for it; it often only names the function it is about to call. It is kept as `Message.plan`, shown as a
decision label and never exported as reasoning. Runs recorded before that field existed kept the label as
the message's reasoning: for such runs (agent `local/...`), `with_plans` moves it where it belongs.
"""

from __future__ import annotations

from collections.abc import Sequence

from envscaler_mcp.harness.models import EpisodeResult

LOCAL_PREFIX = "local/"


def with_plans(results: Sequence[EpisodeResult], agent: str) -> list[EpisodeResult]:
    """The results, with a `local/` agent's old reasoning-held labels moved to `plan` (others unchanged)."""
    return [with_plan(result, agent) for result in results]


def with_plan(result: EpisodeResult, agent: str) -> EpisodeResult:
    """One result, with a `local/` agent's old reasoning-held labels moved to `plan` (others unchanged)."""
    if not agent.startswith(LOCAL_PREFIX) or any(m.plan for m in result.messages):
        return result  # recorded with the field: its reasoning is reasoning
    messages = [
        m.model_copy(update={"plan": m.reasoning, "reasoning": None})
        if m.role == "assistant" and m.reasoning and m.plan is None else m
        for m in result.messages
    ]
    return result.model_copy(update={"messages": messages})
