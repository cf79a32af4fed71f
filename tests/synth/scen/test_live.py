"""Real synthesis from a real model (runs only with --live; a key for API providers, nothing for local/...).

ENVSCALER_LIVE_MODEL picks the model of every seat (default local/qwen2.5-coder-1.5b, the embedded model:
minutes to hours on 2 cores). The scenario test makes scenarios for mini_shop and gates what was kept again
from the file, with the mutation test; the environment test synthesizes from one API-Bank task and requires
a kept environment whose dual-agent check ran with the same model in the tester and checker seats."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton

pytestmark = [pytest.mark.anyio, pytest.mark.live]

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def live_model() -> str:
    return os.environ.get("ENVSCALER_LIVE_MODEL") or os.environ.get("ENVSCALER_SCEN_LIVE_MODEL") \
        or "local/qwen2.5-coder-1.5b"


async def test_a_real_model_makes_a_gated_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.providers import get_provider
    from envscaler_mcp.qa.batch import GateSettings, check_groups
    from envscaler_mcp.synth.scen.pipeline import ScenOptions, run_scenarios

    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")
    provider = get_provider(live_model())
    skeleton = load_skeleton(FIXTURES / "mini_shop" / "skeleton.json")
    try:
        summary = await run_scenarios([skeleton], provider, None, ScenOptions(n=2, out=tmp_path))
    finally:
        await provider.aclose()
    env = summary.environments[0]
    assert env.kept >= 1, env.reasons
    kept = load_scenarios(tmp_path / "mini_shop.jsonl")
    reports = await check_groups([(skeleton, kept)], GateSettings(transport="http", mutation=True))
    assert reports and all(r.passed for r in reports), [r.reasons() for r in reports]


async def test_a_real_model_keeps_an_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.providers import get_provider
    from envscaler_mcp.skeleton.models import EnvSkeleton
    from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig, run_skel

    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")
    provider = get_provider(live_model())
    tasks = FIXTURES / "recorded" / "envs-qwen2.5-coder-1.5b" / "tasks.json"
    config = SkelConfig(out=tmp_path, tasks=tasks)
    config.mine.limit = 1
    config.model.max_failed_methods = 2
    try:
        summary = await run_skel(config, Seats(generator=provider, tester=provider, checker=provider))
    finally:
        await provider.aclose()
    assert summary.counts["kept"] >= 1, [(e.env_id, e.status, e.reason[:300]) for e in summary.environments]
    for path in (tmp_path / "environments").glob("*/skeleton.json"):
        skeleton = EnvSkeleton.model_validate_json(path.read_text())
        assert skeleton.quality is not None and (skeleton.quality.score or 0) >= config.check.quality.threshold
        assert skeleton.provenance.models["tester"] == skeleton.provenance.models["checker"] == live_model()
