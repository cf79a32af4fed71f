"""Tool coverage: each tool seen working on records of a state, lookups that never succeed and crashes found
without a model, and tools not proven dropped by the check."""

from __future__ import annotations

import pytest

from envscaler_mcp.launch import launch_server
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.skel.coverage import prove_tools
from envscaler_mcp.synth.skel.probes import later_state, probes_for, varied_state

from ..conftest import FIXTURES
from ..fixtures.fake_episode import FakeLauncher

pytestmark = pytest.mark.anyio


def test_varied_state_renumbers_shared_keys_and_the_fields_that_refer_to_them() -> None:
    state = {"doctors": {"1": {"id": "1", "name": "Ann"}},
             "appointments": {"1": {"id": "1", "patient_id": "1", "doctor_id": "1"}},
             "folders": {"F-1": {"folder_id": "F-1", "parent_id": "F-1"}}}
    varied = varied_state(state)
    assert varied["doctors"] == state["doctors"]  # the first collection keeps its keys
    (key, appointment), = varied["appointments"].items()
    assert key == appointment["id"] != "1" and appointment["doctor_id"] == "1"
    assert appointment["patient_id"] not in {"1", key}  # no patients collection: numbered apart from both
    assert varied["folders"] == state["folders"]  # no shared key: a reference by value is left alone
    assert varied_state({"a": {"x": {"id": "x"}}}) == {"a": {"x": {"id": "x"}}}


def test_later_state_moves_the_dates_of_the_state() -> None:
    assert later_state({"today": "2025-01-31", "n": 1}, days=1) == {"today": "2025-02-01", "n": 1}
    assert later_state({"n": 1}) is None


def test_probes_take_their_arguments_from_the_anchor_record() -> None:
    skeleton = _original_hospital()
    state = varied_state(skeleton.default_state)
    schedule = probes_for(skeleton.tool("schedule_appointment"), state)
    first = schedule[0].arguments
    assert first["doctor_id"] in state["doctors"] and first["location_id"] in state["locations"]
    cancel = probes_for(skeleton.tool("cancel_appointment"), state)
    assert [p.arguments["appointment_id"] for p in cancel] == list(state["appointments"])  # every record tried


async def test_the_catalogs_synthesized_entry_as_it_was_has_three_tools_that_never_succeed() -> None:
    """The entry the dual-agent check once scored 10/10: patient ids looked up among appointment ids, a location's
    name compared with its id, and a booking that checks patients against doctors."""
    skeleton = _original_hospital()
    async with launch_server(skeleton, transport="pipe") as server:
        proofs = {p.tool: p for p in await prove_tools(skeleton, skeleton.default_state, server.episode)}
    assert {t: p.status for t, p in proofs.items()} == {
        "get_doctor": "works", "get_appointments": "never succeeds", "get_available_doctors": "never succeeds",
        "get_appointment_status": "works", "schedule_appointment": "never succeeds", "cancel_appointment": "works"}
    assert proofs["get_appointments"].refused == 3  # one call per record holding a patient id
    assert proofs["cancel_appointment"].example == {"appointment_id": next(iter(
        varied_state(skeleton.default_state)["appointments"]))}


def _original_hospital() -> EnvSkeleton:
    """The entry as the embedded model's run first kept it (tests/synth/fixtures/hospital_as_first_kept.json)."""
    return EnvSkeleton.model_validate_json((FIXTURES / "hospital_as_first_kept.json").read_text(encoding="utf-8"))


async def test_a_tool_that_raises_crashes_and_one_without_effect_never_succeeds(provider) -> None:
    from tests.synth.skel.test_quality import library

    skeleton, state = library()
    source = skeleton.class_source.replace('def get_book(self, book_id: str) -> dict:\n',
                                           'def get_book(self, book_id: str) -> dict:\n        self._missing()\n', 1)
    assert source != skeleton.class_source
    broken = skeleton.model_copy(update={"class_source": source})
    launcher = FakeLauncher()
    proofs = {p.tool: p.status for p in await prove_tools(broken, state, lambda s: launcher(broken, s))}
    assert proofs == {"get_book": "crashes", "list_member_loans": "works", "checkout_book": "works",
                      "return_book": "works"}


async def test_the_check_drops_a_tool_never_seen_working(tmp_path, router, provider) -> None:
    from envscaler_mcp.synth.skel.checkstage import CheckOptions, check_environment
    from envscaler_mcp.synth.skel.mine import MineOptions, run_mine
    from envscaler_mcp.synth.skel.modeling import ModelOptions, run_model
    from envscaler_mcp.synth.skel.pipeline import load_models, load_topics

    out = tmp_path / "out"
    await run_mine(FIXTURES / "skel_corpus.jsonl", out, provider, MineOptions())
    await run_model(load_topics(out), out, provider, ModelOptions())
    clinic = next(r for r in load_models(out) if r.env_id.startswith("clinic"))
    options = CheckOptions(repair=False, min_tools=3)
    record, skeleton = await check_environment(clinic, provider, provider, provider, options, UsageMeter(),
                                               FakeLauncher())
    assert record.kept and skeleton is not None and skeleton.quality is not None
    assert "cancel_appointment" not in {t.name for t in skeleton.tools}
    assert "def cancel_appointment" not in skeleton.class_source
    status = {p.tool: p.status for p in skeleton.quality.tools}
    assert status["cancel_appointment"] == "dropped" and list(status.values()).count("works") == 3
    assert all(c.tool != "cancel_appointment" for c in skeleton.quality.checks)
    record4, kept4 = await check_environment(clinic, provider, provider, provider, CheckOptions(repair=False,
                                             min_tools=4), UsageMeter(), FakeLauncher())
    assert not record4.kept and kept4 is None and record4.reason == "3 of 4 tools proven to work (< 4)"


def test_show_lists_each_tools_proven_status(tmp_path) -> None:
    from typer.testing import CliRunner

    from envscaler_mcp.cli import app
    from envscaler_mcp.skeleton.models import QualityReport, ToolProof

    skeleton = _original_hospital()
    proofs = [ToolProof(tool=t.name, status="works") for t in skeleton.tools if t.name != "get_appointments"]
    proofs.append(ToolProof(tool="get_appointments", status="dropped", detail="never succeeds: Patient not found"))
    kept = skeleton.model_copy(update={"tools": [t for t in skeleton.tools if t.name != "get_appointments"],
                                       "quality": QualityReport(method="dual-agent", tools=proofs)})
    path = tmp_path / "skeleton.json"
    path.write_text(kept.model_dump_json(), encoding="utf-8")
    result = CliRunner().invoke(app, ["show", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "proven" in result.output and result.output.count("works") == 5
    assert "get_appointments: dropped (never succeeds: Patient not found)" in result.output
