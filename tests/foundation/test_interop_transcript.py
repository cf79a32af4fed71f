"""EnvScaler export/import keeps transcript items and reference answers (EnvScaler's own fields never see
them), so the round trip is lossless both ways."""

from __future__ import annotations

import json
from pathlib import Path

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.interop.from_envscaler import import_envscaler
from envscaler_mcp.interop.to_envscaler import OWN_KEY, export_envscaler
from envscaler_mcp.scenario.models import ChecklistItem

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"
SAYS = "from transcript_checks import says\ndef check_func(transcript):\n    return says(transcript, 12)\n"


def _with_transcript_items() -> list:
    bob, alice = load_scenarios(MINI_SHOP / "scenarios.jsonl")
    checklist = list(bob.checklist)
    checklist.insert(1, ChecklistItem(id="c9", description="Has the agent told the total (12.00)?",
                                      validator=SAYS, kind="transcript"))
    bob = bob.model_copy(update={"checklist": checklist, "reference_answer": "Cancelled; the total was $12.00."})
    return [bob.with_id(), alice.model_copy(update={"reference_answer": ""})]


def test_transcript_items_and_reference_answers_survive_export_and_import(tmp_path: Path) -> None:
    skeleton = load_skeleton(MINI_SHOP)
    scenarios = _with_transcript_items()
    envs, items = export_envscaler([(skeleton, scenarios)])
    # EnvScaler's runner calls every check_func on the final state: transcript items stay out of its fields.
    assert SAYS not in [c["check_func"] for c in items[0]["checklist_with_func"]]
    assert len(items[0]["checklist"]) == len(scenarios[0].checklist) - 1
    assert items[0][OWN_KEY]["transcript_checks"][0]["position"] == 1
    assert items[0][OWN_KEY]["state_items"][1] == {"id": "c2", "claims_change": True}  # ids kept as they were
    assert items[1][OWN_KEY]["reference_answer"] == ""
    assert items[1][OWN_KEY]["state_items"][3] == {"id": "c4", "claims_change": False}
    (tmp_path / "e.json").write_text(json.dumps(envs))
    (tmp_path / "s.json").write_text(json.dumps(items))
    result = import_envscaler(tmp_path / "e.json", tmp_path / "s.json")
    again = result.scenarios["mini_shop"]
    for before, after in zip(scenarios, again, strict=True):
        assert after.checklist == before.checklist
        assert after.reference_answer == before.reference_answer
        assert after.id == before.id
    # ... and the imported scenarios export to the same items (nothing added, nothing lost).
    assert OWN_KEY not in export_envscaler([(skeleton, load_scenarios(MINI_SHOP / "scenarios.jsonl")[:1])])[1][0]
    assert export_envscaler([(result.skeletons[0], again)]) == (envs, items)


def test_clashing_saved_ids_are_numbered_rather_than_refused(tmp_path: Path) -> None:
    skeleton = load_skeleton(MINI_SHOP)
    envs, items = export_envscaler([(skeleton, load_scenarios(MINI_SHOP / "scenarios.jsonl")[:1])])
    items[0][OWN_KEY] = {"transcript_checks": [{"position": 1, "id": "c1", "check_item": "Has it?",
                                               "check_func": SAYS}]}
    (tmp_path / "e.json").write_text(json.dumps(envs))
    (tmp_path / "s.json").write_text(json.dumps(items))
    (again,) = import_envscaler(tmp_path / "e.json", tmp_path / "s.json").scenarios["mini_shop"]
    assert [(c.id, c.kind) for c in again.checklist] == [("c1", "state"), ("c2", "transcript"), ("c3", "state")]


def test_user_turns_survive_export_and_import(tmp_path: Path) -> None:
    from envscaler_mcp.scenario.models import Scenario, ToolCall, Turn
    skeleton = load_skeleton(MINI_SHOP)
    bob = load_scenarios(MINI_SHOP / "scenarios.jsonl")[0]
    calls = bob.reference_solution
    turns = [Turn(user="Cancel O-1002.", reference=calls[:2], checks=["c1"], answer="Cancelled."),
             Turn(user="Which note?", check_state=False),
             Turn(user="Note why.", reference=[ToolCall(tool=calls[2].tool, arguments=calls[2].arguments)],
                  tools_added=["add_note"])]
    data = bob.model_dump(exclude={"id", "reference_solution"})
    multi = Scenario.model_validate({**data, "turns": turns}).with_id()
    envs, items = export_envscaler([(skeleton, [multi])])
    assert [t["user"] for t in items[0][OWN_KEY]["turns"]] == ["Cancel O-1002.", "Which note?", "Note why."]
    (tmp_path / "e.json").write_text(json.dumps(envs))
    (tmp_path / "s.json").write_text(json.dumps(items))
    (again,) = import_envscaler(tmp_path / "e.json", tmp_path / "s.json").scenarios["mini_shop"]
    assert again.turns == multi.turns and again.id == multi.id
    assert [t.check_state for t in again.turns] == [True, False, True]
    assert again.reference_solution == multi.reference_solution  # the turns' calls, in order
