"""Real model output replayed through the pipeline: the answers of local/qwen2.5-coder-1.5b recorded from a
`synth envs` run on the API-Bank corpus (tests/fixtures/recorded/, made by scripts/record_fixtures.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.providers.cache import CacheEntry
from envscaler_mcp.providers.replay import NotRecorded, ReplayProvider
from envscaler_mcp.synth.llm import UsageMeter, ask
from envscaler_mcp.synth.skel.parsers import parse_judge

from ..fixtures.recorded_replay import replay_envs

RECORDED = Path(__file__).parents[2] / "fixtures" / "recorded"
RUNS = sorted(p for p in RECORDED.glob("envs-*") if (p / "manifest.json").exists())

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_every_recorded_answer_is_labelled_with_its_request(run):
    manifest = json.loads((run / "manifest.json").read_text())
    entries = [CacheEntry.model_validate_json(p.read_text()) for p in (run / "answers").glob("*/*.json")]
    assert len(entries) == manifest["calls"] > 0
    for entry in entries:
        assert entry.label == manifest["label"] and entry.label.startswith("recorded from local/")
        assert entry.request is not None and entry.request["messages"] and entry.spec == manifest["spec"]
        assert entry.turn.usage.output_tokens > 0  # a real call, with the usage the runtime reported


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
async def test_the_recorded_run_replays_to_the_same_outcomes(run, tmp_path):
    manifest = json.loads((run / "manifest.json").read_text())
    provider = ReplayProvider(manifest["spec"], run / "answers")
    result = await replay_envs(provider, run / manifest["tasks"], tmp_path, manifest["limit"],
                               manifest.get("max_failed_methods", 0))
    assert result["outcomes"] == manifest["outcomes"] and result["tools"] == manifest["tools"]
    assert result["steps"] == manifest["steps"]  # every step's recorded answers were served and accepted the same
    assert (result["calls"], result["input_tokens"], result["output_tokens"]) == (
        manifest["calls"], manifest["input_tokens"], manifest["output_tokens"])
    topics = [json.loads(line) for line in (tmp_path / "mine" / "topics.jsonl").read_text().splitlines()]
    assert len(topics) == manifest["limit"] and all(t["summary"] and t["introduction"] for t in topics)


async def test_a_request_that_was_not_recorded_is_an_error(tmp_path):
    provider = ReplayProvider("local/qwen2.5-coder-1.5b", tmp_path)
    with pytest.raises(NotRecorded, match="no recorded answer"):
        await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=UsageMeter())
