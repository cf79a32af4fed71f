"""Token usage and cost, shared by every stage that calls a model."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Usage(BaseModel):
    """Token counts and cost of one or more model calls."""

    input_tokens: int = Field(0, description="Prompt tokens sent to the model.")
    output_tokens: int = Field(0, description="Tokens the model generated.")
    cached_tokens: int = Field(0, description="Prompt tokens served from the provider's cache, if reported.")
    cost_usd: float | None = Field(
        0.0, description="Cost in US dollars; None when the price of any model involved is unknown."
    )
    calls: int = Field(0, description="Number of model calls counted.")

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost_usd=cost,
            calls=self.calls + other.calls,
        )
