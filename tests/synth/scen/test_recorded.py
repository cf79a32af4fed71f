"""Real model output replayed through the whole `synth scenarios` pipeline (states, tasks, checklists,
validators, solutions, and the gate on a real server and validator sandbox): the answers of a real model
recorded from a run on a synthesized environment (tests/fixtures/recorded/scen-*, made by
scripts/record_fixtures.py; the label in each answer names the model and the date). What was kept passes the
catalog's gate again, read back from the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.providers.cache import CacheEntry
from envscaler_mcp.providers.replay import ReplayProvider
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.skeleton.models import EnvSkeleton

from ..fixtures.recorded_replay import replay_scenarios

RECORDED = Path(__file__).parents[2] / "fixtures" / "recorded"
RUNS = sorted(p for p in RECORDED.glob("scen-*") if (p / "manifest.json").exists())

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_every_recorded_answer_is_labelled_with_its_request(run: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    entries = [CacheEntry.model_validate_json(p.read_text()) for p in (run / "answers").glob("*/*.json")]
    assert len(entries) == manifest["calls"] > 0
    assert all(e.label and e.label.startswith(f"recorded from {manifest['spec']} on ") and e.request
               and (e.turn.usage.output_tokens > 0 or e.fault) for e in entries)  # a real answer, or its fault


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
async def test_the_recorded_run_replays_to_the_same_scenarios(run: Path, tmp_path: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    skeleton = EnvSkeleton.model_validate_json((run / manifest["skeleton"]).read_text())
    provider = ReplayProvider(manifest["spec"], run / "answers")
    result = await replay_scenarios(provider, skeleton, tmp_path, manifest["options"])
    for key in ("kept", "dropped", "yields", "steps", "calls", "input_tokens", "output_tokens"):
        assert result[key] == manifest[key], key
    path = tmp_path / f"{skeleton.id}.jsonl"
    kept = load_scenarios(path) if path.exists() else []
    assert sorted(s.id or "" for s in kept) == manifest["kept"]
    if kept:
        reports = await check_groups([(skeleton, kept)], GateSettings(transport="pipe", mutation=True))
        assert all(r.passed for r in reports), [r.reasons() for r in reports]
