"""Checklist item kinds and the scenario id: state items hash as before, a transcript item's kind counts."""

from __future__ import annotations

import json
from pathlib import Path

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.scenario.models import ChecklistItem

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"


def test_ids_of_state_only_scenarios_are_unchanged_and_kinds_count() -> None:
    bob = load_scenarios(MINI_SHOP / "scenarios.jsonl")[0]
    raw = json.loads((MINI_SHOP / "scenarios.jsonl").read_text().splitlines()[0])
    assert "kind" not in raw["checklist"][0]  # written before items had kinds: read as state items
    assert bob.checklist[0].kind == "state" and bob.compute_id() == bob.id
    as_transcript = bob.model_copy(update={"checklist": [
        bob.checklist[0].model_copy(update={"kind": "transcript"}), *bob.checklist[1:]]})
    assert as_transcript.compute_id() != bob.id
    answered = bob.model_copy(update={"reference_answer": "Done."})
    assert answered.compute_id() == bob.id  # the answer is not part of what the scenario asks
    assert ChecklistItem(id="c1", description="d").kind == "state"
