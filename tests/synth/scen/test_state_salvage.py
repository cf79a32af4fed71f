"""A state answer cut off at the length limit keeps what it completed: the embedded 1.5B model, asked for 3-4
records per entity of `library_loans`, wrote "The Chronicles of Narnia" book after book until its 4,096 tokens ran
out (recorded in tests/synth/fixtures/state_salvage/library_loans_cut.json), so the answer was no JSON and the item
was dropped after 21 minutes. Its complete members and books are kept, the next call asks only for the rest, and
the merge is checked as a whole answer is. A scripted model plays the follow-up answers (hand-written)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._usage import Usage
from envscaler_mcp.catalog.store import get_skeleton
from envscaler_mcp.providers.base import AssistantTurn, Message
from envscaler_mcp.providers.cache import CacheEntry
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.salvage import salvage_state
from envscaler_mcp.synth.scen.state_step import gen_state
from envscaler_mcp.synth.scen.steps import StepContext
from envscaler_mcp.synth.skel.checkstage import accept_initial_state

pytestmark = pytest.mark.anyio
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "state_salvage"
LIBRARY = get_skeleton("library_loans")
ATTRIBUTES = [a.name for a in LIBRARY.state]
RECORDED = CacheEntry.model_validate_json((FIXTURES / "library_loans_cut.json").read_text())
CUT = RECORDED.turn.message.content or ""
REST: dict[str, Any] = json.loads((FIXTURES / "library_loans_rest.json").read_text())["answer"]
FIRST_BOOKS = ["978-1-04000-100-0", "978-1-04037-819-1", "978-1-04056-456-7", "978-1-04057-878-3"]
MEMBERS = ["M-2001", "M-2002", "M-2003", "M-2004"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def cut_turn(text: str) -> AssistantTurn:
    return AssistantTurn(message=Message(role="assistant", content=text), finish_reason="length",
                         usage=Usage(output_tokens=4096))


def embedded(script: list[Any], repeat_last: bool = False) -> tuple[MockProvider, StepContext]:
    provider = MockProvider(script, context_tokens=8192, repeat_last=repeat_last)  # the embedded model's window, as in the recorded run
    return provider, StepContext(skeleton=LIBRARY, generator=provider, solver=provider)


def test_the_recorded_answer_is_cut_off_looping_on_books() -> None:
    assert RECORDED.label == "recorded from local/qwen2.5-coder-1.5b on 2026-11-28"
    assert RECORDED.turn.finish_reason == "length" and RECORDED.turn.usage.output_tokens == 4096
    assert CUT.count("The Chronicles of Narnia") > 20
    with pytest.raises(AnswerFormatError, match="no initial state JSON object found"):
        accept_initial_state(LIBRARY, CUT)


async def test_the_cut_answer_keeps_its_complete_records_and_one_call_asks_for_the_rest() -> None:
    provider, ctx = embedded([cut_turn(CUT), json.dumps(REST)])
    state = await gen_state(ctx, 0, 1, UsageMeter())
    first, second = provider.requests[0], provider.requests[1]
    assert len(provider.requests) == 2
    # the first prompt is the one the recorded run sent
    assert [m.content for m in first[0]] == [m["content"] for m in (RECORDED.request or {})["messages"]]
    assert list(state) == ATTRIBUTES
    assert state["today"] == "2026-05-12"
    assert list(state["members"]) == MEMBERS  # all four, complete
    assert list(state["books"]) == FIRST_BOOKS  # the first 4 of the loop's 30-odd: asked for 3-4
    assert state["books"]["978-1-04000-100-0"]["title"] == "The Lanternkeeper's Daughter"
    assert {k: state[k] for k in ("copies", "loans", "holds", "fines")} == REST
    # the follow-up asks only for the missing collections, shows the kept ones, and is constrained to the rest
    messages, _, settings = second
    schema = settings.json_schema or {}
    assert schema["required"] == ["copies", "loans", "holds", "fines"] == list(schema["properties"])
    asked = messages[-1].content
    assert "Write only the state attributes still missing: copies, loans, holds, fines." in asked
    assert all(key in asked for key in MEMBERS + FIRST_BOOKS) and "Narnia" not in asked
    assert len(messages) == 2  # a new prompt, not the cut answer carried back
    assert state == accept_initial_state(LIBRARY, json.dumps(state))


async def test_a_follow_up_cut_again_keeps_its_part_and_asks_for_what_is_still_missing() -> None:
    copies = json.dumps({"copies": REST["copies"]})[:-1] + ', "loans": {"L-8001": {"loan_id": "L-80'
    rewrites = {"members": {}, **{k: REST[k] for k in ("loans", "holds", "fines")}}  # a model ignoring the schema
    provider, ctx = embedded([cut_turn(CUT), cut_turn(copies), json.dumps(rewrites)])
    state = await gen_state(ctx, 0, 1, UsageMeter())
    assert state["copies"] == REST["copies"] and state["loans"] == REST["loans"]
    assert list(state["members"]) == MEMBERS  # what was kept stays as it was shown
    third = provider.requests[2][0][-1].content
    assert "Write only the state attributes still missing: loans, holds, fines." in third
    assert "C-30004" in third


def nothing_complete() -> str:
    return CUT[:CUT.index('"M-2002"') - 40]  # cut inside the first member


async def test_a_cut_answer_with_nothing_complete_is_retried_as_before() -> None:
    good = json.dumps(LIBRARY.default_state)
    provider, ctx = embedded([cut_turn(nothing_complete()), good])
    assert salvage_state(LIBRARY, nothing_complete(), ATTRIBUTES, "3-4") == {}  # the date alone is no record
    empty = '{"today": "2026-05-12", "members": {}, "books": {"978-1-04000-100-0": {"isbn": "978-1-04000-100-0", '
    assert salvage_state(LIBRARY, empty, ATTRIBUTES, "3-4") == {}  # nor is an empty collection
    state = await gen_state(ctx, 0, 1, UsageMeter())
    assert state == LIBRARY.default_state
    retry = provider.requests[1][0]
    assert retry[-2].content == nothing_complete()  # the answer carried back with its error
    assert "cut off after 4096 tokens, at the length limit" in retry[-1].content


async def test_an_answer_salvaging_nothing_every_time_drops_the_item_with_its_reason() -> None:
    broken = CUT[:CUT.index('"today"') + 9]  # not even the date completed
    assert salvage_state(LIBRARY, broken, ATTRIBUTES, "3-4") == {}
    provider, ctx = embedded([cut_turn(broken)], repeat_last=True)
    with pytest.raises(StepFailed) as failed:
        await gen_state(ctx, 0, 1, UsageMeter())
    assert failed.value.reason.startswith("no initial state JSON object found")
    assert "cut off after 4096 tokens" in failed.value.reason
    assert len(provider.requests) == 2  # the answer and one retry, as before


async def test_a_merge_that_breaks_the_schema_is_refused_with_the_checks_reasons() -> None:
    bad = copy.deepcopy(REST)
    bad["copies"]["C-30001"]["hold_id"] = 7  # a string or null
    provider, ctx = embedded([cut_turn(CUT), json.dumps(bad)], repeat_last=True)
    with pytest.raises(StepFailed) as failed:
        await gen_state(ctx, 0, 1, UsageMeter())
    merged = {**salvage_state(LIBRARY, CUT, ATTRIBUTES, "3-4"), **bad}
    with pytest.raises(AnswerFormatError) as refused:
        accept_initial_state(LIBRARY, json.dumps(merged))
    assert failed.value.reason == str(refused.value)
    assert "state['copies']['C-30001']['hold_id']: 7 is not of type 'string', 'null'" in failed.value.reason
    assert len(provider.requests) == 3  # the cut answer, the follow-up, its one retry


def test_a_salvaged_collection_that_breaks_its_schema_is_asked_for_again() -> None:
    text = CUT.replace('"year": 1925', '"year": "1925"', 1)  # The Great Gatsby, the third book
    got = salvage_state(LIBRARY, text, ATTRIBUTES, "3-4")
    assert list(got) == ["today", "members"]


def test_a_collection_cut_before_the_fewest_records_asked_for_is_asked_for_again() -> None:
    two_books = CUT[:CUT.index('"978-1-04056-456-7": {') + 30]  # cut inside the third book
    assert list(salvage_state(LIBRARY, two_books, ATTRIBUTES, "3-4")) == ["today", "members"]
    assert list(salvage_state(LIBRARY, two_books, ATTRIBUTES, "2-4")["books"]) == FIRST_BOOKS[:2]
    assert list(salvage_state(LIBRARY, CUT, ATTRIBUTES, "1-2")["members"]) == MEMBERS[:2]
    assert list(salvage_state(LIBRARY, CUT, ["books"], "3-4")) == ["books"]  # only what is pending


def test_an_answer_broken_at_its_end_keeps_what_came_before() -> None:
    members = (LIBRARY.default_state or {})["members"]
    whole = json.dumps({"today": "2026-05-12", "members": {m: members[m] for m in list(members)[:3]}})
    broken = whole[:-1] + ', "books": {"x": 1 "y"}}'
    got = salvage_state(LIBRARY, broken, ATTRIBUTES, "3-4")
    assert list(got) == ["today", "members"] and len(got["members"]) == 3
