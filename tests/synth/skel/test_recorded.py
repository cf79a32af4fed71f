"""Real model output replayed through the whole `synth envs` pipeline (mine, model, and the check stage against
a real server): the answers of a real model recorded from a run on the API-Bank corpus
(tests/fixtures/recorded/envs-*, made by scripts/record_fixtures.py; the label in each answer names the model
and the date)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from envscaler_mcp.providers.cache import CacheEntry
from envscaler_mcp.providers.replay import NotRecorded, ReplayProvider
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.llm import UsageMeter, ask
from envscaler_mcp.synth.skel.parsers import parse_judge

from ..fixtures.recorded_replay import replay_envs

RECORDED = Path(__file__).parents[2] / "fixtures" / "recorded"
RUNS = sorted(p for p in RECORDED.glob("envs-*") if (p / "manifest.json").exists())

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_every_recorded_answer_is_labelled_with_its_request(run: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    entries = [CacheEntry.model_validate_json(p.read_text()) for p in (run / "answers").glob("*/*.json")]
    assert len(entries) == manifest["calls"] > 0
    for entry in entries:  # answers kept from an earlier recording keep their own date
        assert entry.label and re.fullmatch(rf"recorded from {re.escape(manifest['spec'])} on \d{{4}}-\d\d-\d\d",
                                            entry.label)
        assert entry.request is not None and entry.request["messages"] and entry.spec == manifest["spec"]
        assert entry.turn.usage.output_tokens > 0 or entry.fault  # a real call with its usage, or its fault


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
async def test_the_recorded_run_replays_to_the_same_outcomes(run: Path, tmp_path: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    provider = ReplayProvider(manifest["spec"], run / "answers")
    result = await replay_envs(provider, run / manifest["tasks"], tmp_path, manifest["options"])
    for key in ("outcomes", "scores", "kept", "yields", "steps", "calls", "input_tokens", "output_tokens"):
        assert result[key] == manifest[key], key  # every recorded answer served and accepted the same way
    for env_id in manifest["kept"]:
        skeleton = EnvSkeleton.model_validate_json(
            (tmp_path / "environments" / env_id / "skeleton.json").read_text())
        quality = skeleton.quality
        assert quality is not None and quality.method == "dual-agent" and (quality.score or 0) >= quality.threshold
        assert set(skeleton.provenance.models.values()) == {manifest["spec"]}  # one model in every seat
        assert all(c.expected and c.outcome for c in quality.checks)  # the checker stated its expectation


async def test_a_request_that_was_not_recorded_is_an_error(tmp_path: Path) -> None:
    provider = ReplayProvider("local/qwen2.5-coder-1.5b", tmp_path)
    with pytest.raises(NotRecorded, match="no recorded answer"):
        await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=UsageMeter())
