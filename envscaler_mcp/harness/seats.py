"""Seats of a run (agent, simulated user): an LLM provider shared by the run, or a harness policy bound to
each scenario (the oracle)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.oracle import ORACLE, OraclePolicy
from envscaler_mcp.harness.user_sim import SCRIPTED, ScriptedSeat
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.scenario.models import Scenario

Role = Literal["agent", "user"]


class Seat:
    """Hands out the provider of one seat for each scenario and closes what it opened.

    Without `factory` the seat is the LLM provider named by `spec` (`provider/model`), built once and
    shared by every episode; with `factory` each scenario gets `factory(scenario)`.
    """

    def __init__(
        self,
        spec: str,
        *,
        role: Role = "agent",
        base_url: str | None = None,
        factory: Callable[[Scenario], Provider] | None = None,
    ) -> None:
        self.spec = spec
        self.role = role
        self.base_url = base_url
        self._factory = factory
        self._shared: Provider | None = None

    @classmethod
    def oracle(cls, role: Role = "agent") -> Seat:
        """The oracle policy: replays each scenario's reference solution (as the user: states the task)."""
        return cls(ORACLE, role=role, factory=lambda scenario: OraclePolicy(scenario, role=role))

    @classmethod
    def scripted(cls, role: Role = "user") -> Seat:
        """The scripted user: reveals a scenario's turns verbatim, one per agent reply (no model)."""
        if role != "user":
            raise UsageError("'scripted' is a user seat: use it with --user")
        return cls(SCRIPTED, role=role, factory=lambda scenario: ScriptedSeat())

    def for_scenario(self, scenario: Scenario) -> Provider:
        """The provider to use for this scenario's episodes."""
        if self._factory is not None:
            return self._factory(scenario)
        if self._shared is None:
            from envscaler_mcp.providers import get_provider

            self._shared = get_provider(self.spec, base_url=self.base_url)
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


# Seats that are harness policies rather than LLM providers, by the name the command line uses.
POLICIES: dict[str, Callable[[Role], Seat]] = {ORACLE: Seat.oracle, SCRIPTED: Seat.scripted}


def seat_for(spec: str, *, role: Role = "agent", base_url: str | None = None) -> Seat:
    """The seat a command-line spec names: a harness policy ('oracle'), else the LLM provider `spec`."""
    policy = POLICIES.get(spec.strip())
    return policy(role) if policy is not None else Seat(spec, role=role, base_url=base_url)
