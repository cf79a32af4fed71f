"""LLM seats of a run (agent, simulated user): one provider per run, or one per scenario for the oracle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from envscaler_mcp.providers.base import Provider
from envscaler_mcp.scenario.models import Scenario

# Seats whose provider is bound to one scenario (it replays the scenario's reference solution).
SCENARIO_BOUND = ("oracle",)


class Seat:
    """Hands out the provider of one seat for each scenario and closes what it opened."""

    def __init__(self, spec: str, *, role: Literal["agent", "user"] = "agent", base_url: str | None = None,
                 factory: Callable[[Scenario], Provider] | None = None) -> None:
        self.spec = spec
        self.role = role
        self.base_url = base_url
        self._factory = factory
        self._shared: Provider | None = None

    def for_scenario(self, scenario: Scenario) -> Provider:
        """The provider to use for this scenario's episodes."""
        if self._factory is not None:
            return self._factory(scenario)
        from envscaler_mcp.providers import get_provider

        if self.spec.split("/", 1)[0] in SCENARIO_BOUND:
            return get_provider(self.spec, scenario=scenario, role=self.role)
        if self._shared is None:
            opts = {"base_url": self.base_url} if self.base_url else {}
            self._shared = get_provider(self.spec, **opts)
        return self._shared

    def prepare(self, scenario: Scenario) -> None:
        """Set the seat up now, so a missing key or unknown provider stops the run before any episode."""
        if self._factory is None:
            self.for_scenario(scenario)

    async def aclose(self) -> None:
        """Close the shared provider, if one was opened."""
        if self._shared is not None:
            await self._shared.aclose()
            self._shared = None
