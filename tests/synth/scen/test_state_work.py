"""A generated state in which the environment's work cannot be done is refused at the state step and asked again
(synth/scen/feasible.py): the embedded model's `clinic_appointments` state (every slot booked, every appointment
completed) and its `flight_bookings` state (both flights departed before its `today`), recorded from
local/qwen2.5-coder-1.5b (tests/synth/fixtures/state_work/), each cost an item twenty minutes before the gate
dropped it. Each collection is probed on the real server (memory transport) with the reference calls of the
environment's bundled scenarios; no bundled state is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._usage import Usage
from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.providers.base import AssistantTurn, Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen import pipeline
from envscaler_mcp.synth.scen.feasible import (
    MIN_TOOLS,
    Closed,
    Judgement,
    Known,
    closed_reason,
    judge_state,
    known_calls,
    known_for,
)
from envscaler_mcp.synth.scen.pipeline import EnvRun, ScenOptions
from envscaler_mcp.synth.scen.records import StateRecord
from envscaler_mcp.synth.scen.state_step import Checked, gen_state
from envscaler_mcp.synth.scen.steps import StepContext
from envscaler_mcp.synth.skel.checkstage import accept_initial_state

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "state_work"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def recorded(env_id: str) -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{env_id}.json").read_text())
    assert data["label"] == "recorded from local/qwen2.5-coder-1.5b"
    state: dict[str, Any] = data["state"]
    return state


def consistent_clinic() -> dict[str, Any]:
    """The recorded clinic state with its appointments on the slots the state has (three of them named slots of
    another doctor's key, which the missing-record check now sends back before this one runs)."""
    state = recorded("clinic_appointments")
    with pytest.raises(AnswerFormatError, match="names records it does not have"):
        accept_initial_state(get_skeleton("clinic_appointments"), json.dumps(state))
    for visit, slot in zip(state["appointments"].values(), state["slots"].values(), strict=True):
        visit["slot_id"], visit["doctor_id"] = slot["slot_id"], slot["doctor_id"]
    accept_initial_state(get_skeleton("clinic_appointments"), json.dumps(state))
    return state


def known(scenarios: list[Scenario], skip: int | None = None) -> list[Known]:
    return known_calls((s.initial_state, s.reference_solution) for i, s in enumerate(scenarios) if i != skip)


async def judged(env_id: str, state: dict[str, Any]) -> Judgement:
    skeleton = get_skeleton(env_id)
    changers = {t.name for t in skeleton.tools if t.kind == "state_change"}
    async with launch_server(skeleton, "memory") as server:
        return await judge_state(state, known(scenarios_for(env_id)), changers, server.episode)


async def test_the_recorded_clinic_state_is_refused_every_slot_booked_every_visit_completed() -> None:
    state = recorded("clinic_appointments")
    judgement = await judged("clinic_appointments", state)
    assert judgement.refused
    assert {c.collection for c in judgement.closed} == {"appointments", "slots"}
    assert judgement.open == ["patients"]  # contact changes, referrals: open, but outnumbered
    reason = closed_reason(judgement, state)
    assert "the state's today is 2026-04-07" in reason
    assert "Slot D01-2026-04-07-1030 is booked, not open" in reason
    assert "only scheduled appointments can be cancelled" in reason
    assert "give some slots records status 'open'" in reason and "appointments records status 'scheduled'" in reason
    assert all(len(c.refusals) >= MIN_TOOLS for c in judgement.closed)


async def test_the_recorded_flight_state_is_refused_both_flights_departed_before_today() -> None:
    state = recorded("flight_bookings")
    judgement = await judged("flight_bookings", state)
    assert judgement.refused and judgement.open == []
    assert {c.collection for c in judgement.closed} == {"flights", "tickets"}
    reason = closed_reason(judgement, state)
    assert "the state's today is 2026-06-15" in reason and "Flight FL-1001 is departed" in reason
    assert "every flights record tried (FL-1001, FL-1002; status departed)" in reason
    # what the records the known calls were accepted on had: a status and a departure after their `today`
    assert "give some flights records status 'scheduled' and arrival after today (2026-06-15) and departure after " \
        "today (2026-06-15)" in reason


def workable_clinic() -> dict[str, Any]:
    """The recorded clinic state (its appointments on its own slots) with one slot open and one visit scheduled."""
    state = consistent_clinic()
    state["slots"]["D02-2026-04-07-1200"]["status"] = "open"  # a slot left open: a booking can succeed
    state["appointments"]["A-5003"].update(status="scheduled", notes=None)  # a visit still to come
    return state


async def test_the_same_state_with_one_open_slot_and_one_scheduled_visit_is_kept() -> None:
    state = workable_clinic()
    judgement = await judged("clinic_appointments", state)
    assert not judgement.refused and closed_reason(judgement, state) == ""
    assert "appointments" in judgement.open


async def test_no_bundled_default_state_or_scenario_state_is_refused() -> None:
    """Each scenario's state is probed with the other scenarios' calls (not the ones written for it)."""
    checked = judged_collections = expected = 0
    for env_id in list_env_ids():
        skeleton = get_skeleton(env_id)
        scenarios = scenarios_for(env_id)
        changers = {t.name for t in skeleton.tools if t.kind == "state_change"}
        states = [(skeleton.default_state or {}, None)] + [(s.initial_state, i) for i, s in enumerate(scenarios)]
        expected += len(states)
        async with launch_server(skeleton, "memory") as server:
            for state, skip in states:
                judgement = await judge_state(state, known(scenarios, skip), changers, server.episode)
                assert not judgement.refused, (env_id, skip, closed_reason(judgement, state))
                checked += 1
                judged_collections += len(judgement.open) + len(judgement.closed)
    assert checked == expected >= 89 and judged_collections > 2 * checked  # the rule had something to judge


@pytest.fixture
def no_reopening(monkeypatch: pytest.MonkeyPatch) -> None:
    """The state step's mend by code (reopen.py, tests/synth/scen/test_reopen.py) finds nothing that makes the state
    workable: the model is asked again, as these tests are about."""
    async def nothing(*args: Any) -> None:
        return None

    monkeypatch.setattr(pipeline, "reopen_state", nothing)


@pytest.mark.usefixtures("no_reopening")
async def test_a_refused_state_is_asked_again_with_the_reason_and_the_new_one_kept(tmp_path: Path) -> None:
    skeleton = get_skeleton("clinic_appointments")
    bad, good = consistent_clinic(), workable_clinic()
    assert (await judged("clinic_appointments", bad)).refused
    rewritten = {"slots": good["slots"], "appointments": good["appointments"]}  # only the closed collections
    provider = MockProvider([json.dumps(bad), json.dumps(rewritten)], context_tokens=8192)
    lines: list[str] = []
    log = RunLog(tmp_path / "synth.log", echo=lines.append)
    ctx = StepContext(skeleton=skeleton, generator=ReportingProvider(provider, log), solver=provider)  # type: ignore[arg-type]
    async with launch_server(skeleton, "memory") as server:
        run = EnvRun(skeleton, ctx, server, None, ScenOptions(n=1, out=tmp_path))  # type: ignore[arg-type]
        assert run.known == known_for(ctx, scenarios_for("clinic_appointments")) and run.known
        record = await run.state_for("s001", 0)
    assert record is not None and record.state == good and record.repaired
    again = provider.requests[1][0][-1].content
    assert "An earlier answer was refused: the initial state leaves no work to do" in again and "only scheduled appointments can be cancelled" in again
    assert "An earlier answer was refused" not in provider.requests[0][0][-1].content
    assert "Part of this state is kept, exactly as it is" in again  # the open collections, as they were
    assert "Write only the state attributes still missing: slots, appointments." in again
    assert "  s001 states: refused, appointments, slots allow no change; asking again" in lines  # not an outcome
    assert not any(line.startswith("[") for line in lines)  # no item counted as finished by it


@pytest.mark.usefixtures("no_reopening")
async def test_a_state_refused_twice_drops_the_item_at_the_state_step_with_the_reason(tmp_path: Path) -> None:
    skeleton = get_skeleton("flight_bookings")
    provider = MockProvider([json.dumps(recorded("flight_bookings"))], context_tokens=8192, repeat_last=True)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    async with launch_server(skeleton, "memory") as server:
        run = EnvRun(skeleton, ctx, server, None, ScenOptions(n=1, out=tmp_path))  # type: ignore[arg-type]
        assert await run.state_for("s001", 0) is None
    assert len(provider.requests) == 2  # the state and one more: the state step's budget
    drop = json.loads((tmp_path / "_work" / "flight_bookings" / "dropped.jsonl").read_text().splitlines()[0])
    assert drop["step"] == "states" and "Flight FL-1001 is departed" in drop["reason"]
    assert not (tmp_path / "_work" / "flight_bookings" / "states" / "s001.json").exists()


async def test_gen_state_without_a_check_keeps_the_state_as_before() -> None:
    skeleton = get_skeleton("flight_bookings")
    provider = MockProvider([json.dumps(recorded("flight_bookings"))], context_tokens=8192, repeat_last=True)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    assert await gen_state(ctx, 0, 1, UsageMeter()) == recorded("flight_bookings")
    with pytest.raises(StepFailed):  # a check that always refuses: the budget is two answers
        await gen_state(ctx, 0, 1, UsageMeter(), check=_always)


async def _always(state: dict[str, Any]) -> Checked:
    return Checked("nothing to do")


async def test_kept_records_naming_records_the_state_lacks_are_dropped_by_code_when_others_are_left() -> None:
    """The recorded clinic run: the first answer was cut off after the appointments (kept), the follow-up wrote the
    three empty collections still missing, and the merge was refused for appointments on slots the state lacks;
    the 1.5B model, asked for them again, wrote the three empty ones again and the item was dropped at the state
    step. The three appointments on missing slots are dropped by code (A-5001 is on a slot the state has)."""
    skeleton = get_skeleton("clinic_appointments")
    state = recorded("clinic_appointments")
    text = json.dumps(state)
    cut = text[:text.index('"referrals"')]  # today, patients, doctors, slots, appointments complete
    rest = {"referrals": {}, "medications": {}, "prescriptions": {}}  # the recorded follow-up, word for word
    provider = MockProvider([AssistantTurn(message=Message(role="assistant", content=cut), finish_reason="length",
                                           usage=Usage(output_tokens=4096)), json.dumps(rest)], context_tokens=8192)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    mends: list[str] = []
    got = await gen_state(ctx, 0, 1, UsageMeter(), mends=mends)
    assert list(got["appointments"]) == ["A-5001"] and got["slots"] == state["slots"]
    assert len(provider.requests) == 2  # no model call to mend it
    assert mends == ["dropped 3 of 4 appointments naming slots the state lacks (A-5002 on D02-2026-04-07-1100, "
                     "A-5003 on D03-2026-04-07-1130, A-5004 on D04-2026-04-07-1200)"]
    accept_initial_state(skeleton, json.dumps(got))


async def test_kept_records_naming_records_the_state_lacks_are_asked_for_again_when_none_would_be_left() -> None:
    """As above, the fourth appointment for a patient the state lacks: dropping them would leave none, so the
    appointments are asked for again, with the refusal."""
    skeleton = get_skeleton("clinic_appointments")
    state, fixed = recorded("clinic_appointments"), consistent_clinic()
    state["appointments"]["A-5001"]["patient_id"] = "PT-1009"  # on a slot the state has, for a missing patient
    text = json.dumps(state)
    cut = text[:text.index('"referrals"')]
    rest = {"referrals": {}, "medications": {}, "prescriptions": {}}
    provider = MockProvider([AssistantTurn(message=Message(role="assistant", content=cut), finish_reason="length",
                                           usage=Usage(output_tokens=4096)),
                             json.dumps(rest), json.dumps({"appointments": fixed["appointments"]})],
                            context_tokens=8192)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    mends: list[str] = []
    got = await gen_state(ctx, 0, 1, UsageMeter(), mends=mends)
    assert got["appointments"] == fixed["appointments"] and got["slots"] == state["slots"] and mends == []
    assert "appointments['A-5001'].patient_id is 'PT-1009'" in provider.requests[2][0][-1].content
    third = provider.requests[2][0][-1].content
    assert "Write only the state attributes still missing: appointments." in third
    assert "appointments['A-5002'].slot_id is 'D02-2026-04-07-1100', but slots has no record" in third
    assert '"A-5002"' not in third.split("Part of this state is written already")[1].split("Write only")[0]


async def test_kept_records_still_naming_missing_records_after_asking_again_drop_the_item() -> None:
    skeleton = get_skeleton("clinic_appointments")
    state = recorded("clinic_appointments")
    state["appointments"]["A-5001"]["patient_id"] = "PT-1009"  # every appointment names a missing record
    text = json.dumps(state)
    cut = text[:text.index('"referrals"')]
    provider = MockProvider([AssistantTurn(message=Message(role="assistant", content=cut), finish_reason="length",
                                           usage=Usage(output_tokens=4096)),
                             json.dumps({"referrals": {}, "medications": {}, "prescriptions": {}}),
                             json.dumps({"appointments": state["appointments"]})], context_tokens=8192)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    with pytest.raises(StepFailed) as failed:
        await gen_state(ctx, 0, 1, UsageMeter())
    assert "names records it does not have" in failed.value.reason and len(provider.requests) == 3


def test_the_rule_more_closed_collections_than_open_ones() -> None:
    def closed(name: str) -> Closed:
        return Closed(name, ["paid"])

    assert not Judgement(closed=[closed("fines")], open=["loans"]).refused  # one settled beside an open one
    assert not Judgement().refused  # nothing judged: no evidence
    assert Judgement(closed=[closed("fines")]).refused
    assert Judgement(closed=[closed("slots"), closed("appointments")], open=["patients"]).refused
    assert not Judgement(closed=[closed("a"), closed("b")], open=["c", "d"]).refused


async def test_a_state_mended_by_code_says_so_in_its_record_and_the_progress_log(tmp_path: Path) -> None:
    skeleton = get_skeleton("clinic_appointments")
    state = workable_clinic()
    state["appointments"]["A-5009"] = {**state["appointments"]["A-5001"], "appointment_id": "A-5009",
                                       "slot_id": "D01-2026-04-09-0900"}  # a slot the state lacks
    provider = MockProvider([json.dumps(state)], context_tokens=8192)
    record, lines = await state_step(skeleton, provider, tmp_path)
    assert record is not None and "A-5009" not in record.state["appointments"] and len(provider.requests) == 1
    assert record.mends == ["dropped 1 of 5 appointments naming slots the state lacks (A-5009 on "
                            "D01-2026-04-09-0900)"]
    assert f"  s001 states: state mended: {record.mends[0]}" in lines
    saved = json.loads((tmp_path / "_work" / "clinic_appointments" / "states" / "s001.json").read_text())
    assert saved["mends"] == record.mends


async def state_step(skeleton: EnvSkeleton, provider: MockProvider, out: Path) -> tuple[StateRecord | None,
                                                                                       list[str]]:
    """Item s001's state step of a run into `out` (memory transport), and the run's progress log lines."""
    lines: list[str] = []
    ctx = StepContext(skeleton=skeleton, generator=ReportingProvider(provider, RunLog(out / "synth.log",
                                                                                      echo=lines.append)),
                      solver=provider)  # type: ignore[arg-type]
    async with launch_server(skeleton, "memory") as server:
        run = EnvRun(skeleton, ctx, server, None, ScenOptions(n=1, out=out))  # type: ignore[arg-type]
        return await run.state_for("s001", 0), lines
