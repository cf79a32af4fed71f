"""One real scenario from a real model on mini_shop (runs only with --live and a provider key).

ENVSCALER_SCEN_LIVE_MODEL picks the model (default openai/gpt-4.1-mini)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton

pytestmark = [pytest.mark.anyio, pytest.mark.live]


async def test_a_real_model_makes_a_gated_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.providers import get_provider
    from envscaler_mcp.synth.scen.pipeline import ScenOptions, run_scenarios

    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")
    provider = get_provider(os.environ.get("ENVSCALER_SCEN_LIVE_MODEL", "openai/gpt-4.1-mini"))
    skeleton_path = Path(__file__).resolve().parents[2] / "fixtures" / "mini_shop" / "skeleton.json"

    try:
        summary = await run_scenarios([load_skeleton(skeleton_path)], provider, None, ScenOptions(n=2, out=tmp_path))
    finally:
        await provider.aclose()
    env = summary.environments[0]
    assert env.states >= 1 and sum(u.calls for u in env.usage.values()) >= 5, env
    if env.kept:
        assert load_scenarios(tmp_path / "mini_shop.jsonl")
