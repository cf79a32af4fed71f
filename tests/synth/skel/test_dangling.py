"""A model's initial state whose records name records it does not have (synth/skel/dangling.py) is sent back
at the state step: the embedded model's cloud_storage state gave user U01 plan "business" beside plans "free" and
"standard", and every call about U01 crashed at the gate forty minutes later."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import get_skeleton
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.skel.checkstage import accept_initial_state
from envscaler_mcp.synth.skel.dangling import dangling_references, repointed, without_dangling

ROOT = Path(__file__).resolve().parents[3]


def _cloud(plan: str) -> dict:
    state = json.loads((ROOT / "environments" / "cloud_storage" / "default_state.json").read_text())
    user = next(iter(state["users"]))
    state["users"][user]["plan"] = plan
    return state


def test_a_user_on_a_plan_the_state_lacks_is_sent_back_with_the_record_and_the_keys() -> None:
    skeleton = get_skeleton("cloud_storage")
    kept = accept_initial_state(skeleton, json.dumps(_cloud(next(iter(_cloud("x")["plans"])))))
    assert kept["users"]
    with pytest.raises(AnswerFormatError) as refused:
        accept_initial_state(skeleton, json.dumps(_cloud("enterprise")))
    text = str(refused.value)
    assert "names records it does not have" in text and ".plan is 'enterprise'" in text and "plans has no record" in text


def test_what_is_not_a_missing_record_is_not_reported() -> None:
    state = {
        "employees": {"E1": {"name": "Ada"}, "E2": {"name": "Bo"}},
        "folders": {"F-1": {"parent_id": None}, "F-2": {"parent_id": "F-1"}},
        "files": {"D-1": {"folder_id": "F-2"}},
        # an author that is a sentinel, not an employee; an item that is a folder or a file
        "comments": {"C1": {"author_id": "E1"}, "C2": {"author_id": "E2"}, "C3": {"author_id": "system"}},
        "shares": {"S1": {"item_id": "F-1"}, "S2": {"item_id": "D-1"}, "S3": {"item_id": "F-2"}},
        "tickets": {"T1": {"status": "open", "tags": ["urgent", ""]}},
    }
    assert dangling_references(state) == []


def test_missing_records_named_by_field_name_by_key_shape_and_in_lists() -> None:
    state = {
        "plans": {"free": {}, "standard": {}},
        "employees": {"E1001": {}, "E1002": {}},
        "users": {"U1": {"plan": "business"}, "U2": {"plan": "free"}},
        "comments": {"C1": {"author_id": "E1001"}, "C2": {"author_id": "E1002"}, "C3": {"author_id": "E1009"}},
        "teams": {"TM1": {"employee_ids": ["E1001", "E1003"]}},
    }
    found = dangling_references(state)
    assert any("users['U1'].plan is 'business'" in line for line in found)
    assert any("comments['C3'].author_id is 'E1009'" in line for line in found)
    assert any("teams['TM1'].employee_ids is 'E1003'" in line for line in found)
    assert len(found) == 3


def test_no_bundled_state_or_scenario_is_refused() -> None:
    checked = 0
    for path in sorted((ROOT / "environments").glob("*/default_state.json")):
        assert dangling_references(json.loads(path.read_text())) == [], path
        checked += 1
    for path in sorted((ROOT / "scenarios").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                assert dangling_references(json.loads(line)["initial_state"]) == [], path
                checked += 1
    assert checked > 80


def _flights_with_tickets_on_missing_bookings() -> dict:
    """The recorded flight_bookings state (tests/synth/fixtures/state_work/) with two more tickets on bookings
    BK-2003 and BK-2004, which it lacks, as the embedded model wrote them at a5d2e2f."""
    data = json.loads((ROOT / "tests" / "synth" / "fixtures" / "state_work" / "flight_bookings.json").read_text())
    state = data["state"]
    for number, booking in (("10003", "BK-2003"), ("10004", "BK-2004")):
        state["tickets"][f"T-{number}"] = {**state["tickets"]["T-10001"], "ticket_id": f"T-{number}",
                                           "booking_id": booking}
    return state


def test_records_naming_missing_records_are_dropped_when_the_rest_is_consistent() -> None:
    state = _flights_with_tickets_on_missing_bookings()
    skeleton = get_skeleton("flight_bookings")
    with pytest.raises(AnswerFormatError, match="names records it does not have"):
        accept_initial_state(skeleton, json.dumps(state))
    found = without_dangling(state)
    assert found is not None
    mended, lines = found
    assert sorted(mended["tickets"]) == ["T-10001", "T-10002"] and mended["bookings"] == state["bookings"]
    assert lines == {"tickets": "dropped 2 of 4 tickets naming bookings the state lacks (T-10003 on BK-2003, "
                                "T-10004 on BK-2004)"}
    assert dangling_references(mended) == [] and accept_initial_state(skeleton, json.dumps(mended)) == mended
    assert len(state["tickets"]) == 4  # the answer itself is left as it was


def test_records_are_not_dropped_when_a_collection_would_be_empty_or_another_record_would_dangle() -> None:
    state = _flights_with_tickets_on_missing_bookings()
    state["payments"]["PAY-0003"] = {**state["payments"]["PAY-0001"], "payment_id": "PAY-0003",
                                     "ticket_id": "T-10003"}  # names a ticket that would be dropped
    assert without_dangling(state) is None
    every = _flights_with_tickets_on_missing_bookings()
    for ticket in every["tickets"].values():
        ticket["booking_id"] = "BK-2009"  # no ticket would be left
    assert without_dangling(every) is None
    assert without_dangling(_cloud("free")) is None  # nothing dangles: nothing to mend


def test_records_are_not_dropped_when_something_deeper_in_the_state_names_them() -> None:
    # a dropped ticket named inside a list of dicts of another record, or by an attribute that is no collection
    nested = _flights_with_tickets_on_missing_bookings()
    booking = next(iter(nested["bookings"].values()))
    booking["history"] = [{"event": "seat change", "ticket_id": "T-10003"}]
    assert without_dangling(nested) is None
    loose = _flights_with_tickets_on_missing_bookings()
    loose["waitlist"] = ["T-10004"]
    assert without_dangling(loose) is None


def test_a_record_that_cannot_be_dropped_is_pointed_at_a_record_the_state_has() -> None:
    # the 1.5B model's cloud_storage states (29 November 2026): a user on a plan the state lacks; every user is
    # named by files and folders, so none can be dropped
    state = _cloud("enterprise")
    user = next(iter(state["users"]))
    assert without_dangling(state) is None
    found = repointed(state)
    assert found is not None
    mended, said = found
    from collections import Counter

    first = Counter(u["plan"] for u in state["users"].values() if u["plan"] in state["plans"]).most_common(1)[0][0]
    assert mended["users"][user]["plan"] == first and state["users"][user]["plan"] == "enterprise"  # a copy
    assert dangling_references(mended) == []
    assert said == {"users": f"pointed 1 of {len(state['users'])} users at records the state has ({user} plan "
                             f"'enterprise' -> '{first}')"}
    accept_initial_state(get_skeleton("cloud_storage"), json.dumps(mended))  # the skeleton's checks pass
    assert repointed(_cloud(first)) is None  # nothing dangles: nothing to mend
