"""Token prices per model and the cost of one call.

The built-in table holds list prices in US dollars per million tokens, as published on the OpenAI and
Anthropic pricing pages in November 2025 (standard tier, no batch discount). Prices change, and a table
in the code is only as new as its release, so there is an update path that needs no release: the JSON file
named by `ENVSCALER_MCP_PRICES` (`{"openai/gpt-4.1": {"input": 2.0, "output": 8.0, "cached_input": 0.5},
...}`) overrides or extends the built-in table for every run, and a provider's `price_table` option (a
file or a mapping) overrides both. A model found in no table still has its tokens counted; its cost is
None ("unknown"). (No maintained price map is a dependency: the ones on PyPI fetch updates at run time or
cover many vendors we do not call; a file the user keeps is simpler and works offline.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._io import read_json
from envscaler_mcp._usage import Usage
from envscaler_mcp.errors import InputFileError


class ModelPrice(BaseModel):
    """Price of one model in US dollars per million tokens."""

    input: float = Field(description="Per million prompt tokens not served from a cache.")
    output: float = Field(description="Per million generated tokens.")
    cached_input: float | None = Field(None, description="Per million cached prompt tokens; None = same as input.")


def _p(inp: float, out: float, cached: float | None = None) -> ModelPrice:
    return ModelPrice(input=inp, output=out, cached_input=cached)


# Prices as of November 2025 (vendors' public pricing pages). Keys are "provider/model-prefix":
# the longest matching prefix wins, so dated snapshots (claude-sonnet-4-20250514) find their family.
BUILTIN_PRICES: dict[str, ModelPrice] = {
    "openai/gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "openai/gpt-4o": _p(2.50, 10.00, 1.25),
    "openai/gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "openai/gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "openai/gpt-4.1": _p(2.00, 8.00, 0.50),
    "openai/gpt-5-nano": _p(0.05, 0.40, 0.005),
    "openai/gpt-5-mini": _p(0.25, 2.00, 0.025),
    "openai/gpt-5": _p(1.25, 10.00, 0.125),
    "openai/o4-mini": _p(1.10, 4.40, 0.275),
    "openai/o3-mini": _p(1.10, 4.40, 0.55),
    "openai/o3": _p(2.00, 8.00, 0.50),
    "anthropic/claude-3-5-haiku": _p(0.80, 4.00, 0.08),
    "anthropic/claude-haiku-4-5": _p(1.00, 5.00, 0.10),
    "anthropic/claude-3-7-sonnet": _p(3.00, 15.00, 0.30),
    "anthropic/claude-sonnet-4": _p(3.00, 15.00, 0.30),
    "anthropic/claude-opus-4-5": _p(5.00, 25.00, 0.50),
    "anthropic/claude-opus-4": _p(15.00, 75.00, 1.50),
    # the embedded models run on this machine: no money changes hands
    "local/": _p(0.0, 0.0, 0.0),
}


PRICES_VARIABLE = "ENVSCALER_MCP_PRICES"  # a JSON file of prices over the built-in table


class PriceTable:
    """Looks up a model's price by longest matching "provider/model" prefix."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices: dict[str, ModelPrice] = dict(BUILTIN_PRICES if prices is None else prices)

    @classmethod
    def load(cls, source: str | Path | Mapping[str, object] | PriceTable | None,
             env: Mapping[str, str] | None = None) -> PriceTable:
        """The built-in table, overridden by the file `ENVSCALER_MCP_PRICES` names (in `env`, default
        os.environ), then by `source`: a JSON file path or a mapping of spec -> price."""
        if isinstance(source, PriceTable):
            return source
        table = cls()
        user_file = (os.environ if env is None else env).get(PRICES_VARIABLE)
        if user_file:
            table._update(Path(user_file))
        if source is not None:
            table._update(source)
        return table

    def _update(self, source: str | Path | Mapping[str, object]) -> None:
        data = read_json(Path(source)) if isinstance(source, (str, Path)) else dict(source)
        if not isinstance(data, dict):
            raise InputFileError(source, "a price table must be a JSON object of 'provider/model' -> price")
        for key, value in data.items():
            try:
                self.prices[key] = value if isinstance(value, ModelPrice) else ModelPrice.model_validate(value)
            except ValidationError as exc:
                raise InputFileError(source, f"price of '{key}' is invalid: {exc.errors()[0]['msg']}",
                                     hint='use {"input": <usd per 1M>, "output": <usd per 1M>}') from exc

    def price(self, spec: str) -> ModelPrice | None:
        """Price of a `provider/model` spec, or None when unknown."""
        matches = [k for k in self.prices if spec.startswith(k)]
        return self.prices[max(matches, key=len)] if matches else None

    def usage(self, spec: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> Usage:
        """Usage of one call with its cost (None when the model's price is unknown)."""
        price = self.price(spec)
        cost = None
        if price is not None:
            cached_rate = price.input if price.cached_input is None else price.cached_input
            uncached = max(input_tokens - cached_tokens, 0)
            cost = (uncached * price.input + cached_tokens * cached_rate + output_tokens * price.output) / 1e6
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached_tokens,
                     cost_usd=cost, calls=1)
