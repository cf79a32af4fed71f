"""Transcript helpers: facts matched after normalisation (never as raw substrings), calls made and not made,
and the evidence each records."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from envscaler_mcp.transcript import checks as tc
from envscaler_mcp.transcript import evidence
from envscaler_mcp.transcript.facts import fact_spans


def transcript(answer: str = "", calls: list[dict[str, Any]] | None = None, told: list[str] | None = None
               ) -> dict[str, Any]:
    return {"calls": calls or [], "answer": answer, "told_user": told or []}


def says(text: str, *facts: Any, **kw: Any) -> tuple[bool, list[str]]:
    evidence.begin()
    return tc.says(transcript(text), *facts, **kw), evidence.take()


@pytest.mark.parametrize(("text", "fact"), [
    ("Your refund of $24.00 was issued.", 24),
    ("Your refund of 24.00 USD was issued.", "$24"),
    ("Refund: 24.0", "24.00 USD"),
    ("The total is 1,024.50.", "1024.5"),
    ("The total is 1024.5 dollars.", "$1,024.50"),
    ("It arrives on March 5, 2026.", "2026-03-05"),
    ("It arrives on 5 Mar 2026.", "2026-03-05"),
    ("It arrives on Thursday, March 5th.", "2026-03-05"),
    ("It arrives on 2026-03-05.", "March 5, 2026"),
    ("It arrives on 2026-03-05.", dt.date(2026, 3, 5)),
    ("Order o 10053 is pending.", "O-10053"),
    ("Order O10053 is pending.", "o-10053"),
    ("See you at 2:30 PM.", "14:30"),
    ("See you at 14:30.", "2:30 pm"),
    ("Pick it up at 1 pm.", "13:00"),
    ("Pick it up at 12:15 am.", "00:15"),
    ("Two units are left.", 2),
    ("The cable is 1.5m long.", 1.5),  # a one-letter unit
    ("You use 12.4GB of 15 GB.", 12.4),
    ("The status is Shipped.", "shipped"),
    ("Your doctor is Dr. Amara  Patel.", "amara patel"),
])
def test_facts_match_after_normalisation(text: str, fact: Any) -> None:
    ok, evidence = says(text, fact)
    assert ok, evidence
    assert evidence and evidence[0].startswith(f"stated {str(fact)!r}")


def test_every_month_name_and_abbreviation_reads_as_its_month() -> None:
    names = ["January Jan", "February Feb", "March Mar", "April Apr", "May", "June Jun", "July Jul", "August Aug",
             "September Sep Sept", "October Oct", "November Nov", "December Dec"]
    for month, written in enumerate(names, start=1):
        for name in written.split():
            for text in (f"It arrives on {name} 5, 2026.", f"It arrives on 5 {name}. 2026."):
                ok, evidence = says(text, f"2026-{month:02d}-05")
                assert ok, evidence


@pytest.mark.parametrize(("text", "fact"), [
    ("Refund 2400 issued.", 24),
    ("Return R-5240 was opened.", 24),
    ("See pages 1-24 of the manual.", 24),
    ("The cable is 1.5m-2m long.", 1.5),  # a range of lengths states neither
    ("Refund 24.5 issued.", 24),
    ("It arrives on 2026-03-24.", 24),
    ("It arrives on 2026-03-06.", "2026-03-05"),
    ("Order O-100531 is pending.", "O-10053"),
    ("Order O-10053-2 is pending.", "O-10053"),
    ("See you at 2:30.", "14:30"),
    ("Seat 12A is yours.", 12),
    ("Version 1.2.3 is installed.", 2),
    ("B/24 is your gate.", 24),  # glued by '/' to a one-character token at the start: a code, not 24
    ("Firmware 2.0beta3 is installed.", 2),  # a version, not the number 2
    ("The status is unshipped.", "shipped"),
    ("", 24),
])
def test_raw_substrings_and_near_misses_do_not_match(text: str, fact: Any) -> None:
    ok, evidence = says(text, fact)
    assert not ok
    assert evidence[0].startswith(f"missing {str(fact)!r} in the answer")


def test_every_fact_must_be_stated_and_each_records_evidence() -> None:
    ok, evidence = says("Order O-10053 ships on 2026-03-05.", "O-10053", "2026-03-05", 30)
    assert not ok
    assert evidence[0] == "stated 'O-10053': \u00abOrder O-10053 ships on 2026-03-05.\u00bb"
    assert evidence[2].startswith("missing '30' in the answer")
    assert len(evidence) == 3  # one line per fact: a failed check adds no verdict on facts it did not count
    ok, evidence = says("Order O-10053 was placed in March. It ships on 2026-03-05, for $30.", "O-10053", 30,
                        "2026-04-01")
    assert not ok and [e.split(":")[0] for e in evidence] == ["stated 'O-10053'", "stated '30'", "missing '2026-04-01' in the answer"]


def test_where_selects_the_answer_or_what_the_user_was_told() -> None:
    t = transcript("Done.", told=["Your refund is $24.00.", "Done."])
    assert not tc.says(t, 24)
    assert tc.says(t, 24, where="told_user")
    assert tc.says(t, 24, where="any")
    with pytest.raises(ValueError):
        tc.says(t, 24, where="somewhere")
    with pytest.raises(TypeError):
        tc.says(t)
    with pytest.raises(TypeError):
        tc.says(t, True)


def test_not_says() -> None:
    t = transcript("Your refund is $24.00.")
    assert tc.not_says(t, 25, "cancelled")
    assert not tc.not_says(t, 24)


CALLS = [
    {"name": "get_order", "arguments": {"order_id": "O-1"}, "result": {"success": False, "error": "no"},
     "is_error": False},
    {"name": "get_order", "arguments": {"order_id": "o-2 "}, "result": {"success": True}, "is_error": False},
    {"name": "search", "arguments": {"query": "Camping Lantern", "max_price": 20}, "result": "oops",
     "is_error": True},
]


def test_called_with_key_arguments_and_success() -> None:
    t = transcript(calls=CALLS)
    evidence.begin()
    assert tc.called(t, "get_order", order_id="O-2")  # case and surrounding space ignored
    assert evidence.take() == ['call 2 get_order({"order_id": "o-2 "}) ok']
    assert not tc.called(t, "get_order", order_id="O-1")  # made, but it failed
    assert tc.called(t, "get_order", ok=False, order_id="O-1")  # any attempt
    assert not tc.called(t, "search", query=lambda q: "lantern" in q.lower())  # an error result
    assert tc.called(t, "search", ok=False, query=lambda q: "lantern" in q.lower(), max_price=20.0)
    evidence.begin()
    assert not tc.called(t, "cancel_order", order_id="O-1")
    assert evidence.take() == ["no successful call cancel_order(order_id=O-1); cancel_order was never called "
                          "(3 calls in all)"]


def test_not_called_counts_any_attempt() -> None:
    t = transcript(calls=CALLS)
    assert tc.not_called(t, "cancel_order")
    assert tc.not_called(t, "get_order", order_id="O-3")
    evidence.begin()
    assert not tc.not_called(t, "get_order", order_id="O-1")
    assert evidence.take() == ['call 1 get_order({"order_id": "O-1"}) failed, which it must not']


def test_malformed_transcripts_are_empty_not_crashes() -> None:
    assert not tc.says(None, 1)
    assert not tc.called({"calls": [None, 3]}, "x")
    assert tc.not_called({}, "x")


def test_fact_spans_give_a_variant_with_one_value_changed() -> None:
    text = "Refund of $1,024.50 on March 5, 2026 at 2:30 PM for R-510, two items."
    found = [(s.kind, s.text, s.mutated) for s in fact_spans(text)]
    assert found == [
        ("number", "1,024.50", "1,025.50"),
        ("date", "March 5, 2026", "March 6, 2026"),
        ("time", "2:30 PM", "3:30 PM"),
        ("id", "R-510", "R-511"),
        ("number", "two", "three"),
    ]
    for span in fact_spans(text):
        evidence.begin()
        original = text
        changed = text[: span.start] + span.mutated + text[span.end :]
        assert tc.says(transcript(original), span.text)
        assert not tc.says(transcript(changed), span.text), span


def test_called_compares_an_object_argument_field_by_field() -> None:
    calls = [{"name": "ship", "arguments": {"address": {"city": "Lyon ", "zip": "69001"}, "lines": [1, 2]},
              "result": {"success": True}, "is_error": False}]
    t = transcript(calls=calls)
    evidence.begin()
    assert tc.called(t, "ship", address={"city": "lyon", "zip": "69001"}, lines=[1, 2])
    assert not tc.called(t, "ship", address={"city": "Lyon"})  # a field the check does not name is a difference
    assert not tc.called(t, "ship", address={"city": "Lyon", "zip": "69002"})
    assert not tc.called(t, "ship", lines=[1])
    evidence.take()


def test_up_to_thirty_different_values_are_an_answer_and_more_are_candidates() -> None:
    # a long honest answer (a stock report of 30 shelves) still states its values; one more value makes the
    # answer a list of candidates
    def report(shelves: int) -> str:
        return " ".join(f"Shelf {chr(65 + k // 26)}{chr(65 + k % 26)} holds ${k + 1}.50 worth." for k in range(shelves))

    assert says(report(30), 5.5)[0] is True
    ok, evidence = says(report(31), 5.5)
    assert ok is False and "states 31 different numbers" in evidence[-1]
    eight = [k + 1.5 for k in range(8)]  # eight numbers asked for: the bound is four per number, 32
    assert says(report(32), *eight)[0] is True
    ok, evidence = says(report(33), *eight)
    assert ok is False and all("states 33 different numbers" in line for line in evidence)


def test_evidence_quotes_the_sentence_without_the_previous_ones_end() -> None:
    for text in ("? Your total is $12.00.", "Done? Your total is $12.00.", "Done.\nYour total is $12.00."):
        assert says(text, 12) == (True, ["stated '12': \u00abYour total is $12.00.\u00bb"]), text


def test_evidence_shows_people_s_text_as_written() -> None:
    # evidence is read by people: text is shown as written, not as JSON escapes (which would also push it past
    # the 160-character cut)
    calls = [{"name": "ship", "arguments": {"city": "Zürich", "note": "Grüße " * 20}, "result": {"success": True},
              "is_error": False}]
    evidence.begin()
    assert tc.called(transcript(calls=calls), "ship", city="zürich")
    [shown] = evidence.take()
    assert shown == 'call 1 ship({"city": "Zürich", "note": "' + "Grüße " * 20 + '"}) ok'  # 150 characters: not cut
    evidence.begin()
    assert not tc.called(transcript(calls=calls), "ship", city={"name": "Genève"})
    assert evidence.take()[0].startswith('no successful call ship(city={"name": "Genève"}); calls to ship: call 1')


def test_evidence_is_capped_cut_and_taken_once() -> None:
    evidence.begin()
    evidence.note("x" * (evidence.MAX_TEXT + 50))
    for n in range(evidence.MAX_EVIDENCE + 5):
        evidence.note(f"entry {n}")
    taken = evidence.take()
    assert len(taken) == evidence.MAX_EVIDENCE and taken[1] == "entry 0"
    assert len(taken[0]) == evidence.MAX_TEXT and taken[0].endswith("...")
    assert evidence.take() == []  # taking starts afresh
    evidence.note("left over")
    evidence.begin()  # a new check drops what an earlier one left
    assert evidence.take() == []
