"""The time limit of one episode.

A fixed `--timeout` is a fixed deadline. Without one, the limit follows the agent's measured speed: a provider
that can say how long one more turn may take on this machine (`turn_budget_s`, the local model) gets that much
per remaining step, recomputed after every turn, so a slow machine is not cut off while a hung model still
is. Providers that cannot say get `DEFAULT_TIMEOUT_S`.
"""

from __future__ import annotations

import anyio

from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.providers.base import Provider

DEFAULT_TIMEOUT_S = 600.0


def turn_budget(agent: Provider, config: EpisodeConfig) -> float | None:
    """Seconds the agent says one more turn may take here, or None when it cannot say."""
    budget = getattr(agent, "turn_budget_s", None)
    return float(budget(config.agent_settings)) if callable(budget) else None


class EpisodeClock:
    """Owns the cancel scope of an episode's agent loop and moves its deadline as the speed is measured."""

    def __init__(self, agent: Provider, config: EpisodeConfig) -> None:
        self.agent = agent
        self.config = config
        self.scope = anyio.CancelScope(deadline=anyio.current_time() + self._seconds(0))

    def _seconds(self, steps_done: int) -> float:
        if self.config.timeout_s is not None:
            return self.config.timeout_s
        per_turn = turn_budget(self.agent, self.config)
        if per_turn is None:
            return DEFAULT_TIMEOUT_S
        return per_turn * max(1, self.config.max_steps - steps_done)

    def after_turn(self, steps_done: int) -> None:
        """Recompute the deadline from now for the steps left (only when it follows the measured speed)."""
        if self.config.timeout_s is None and turn_budget(self.agent, self.config) is not None:
            self.scope.deadline = anyio.current_time() + self._seconds(steps_done)
