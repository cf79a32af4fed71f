"""`says` counts a fact only where the answer asserts it: not negated, not hedged or offered among
alternatives, and, for facts asked together, stated about one thing. The adversarial answer set
(tests/transcript/data/answers.jsonl) gets the verdict it deserves on the bundled read-only scenarios."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.transcript import checks as tc
from envscaler_mcp.transcript import evidence

DATA = Path(__file__).parent / "data" / "answers.jsonl"
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "answers_bench.py"


def says(text: str, *facts: Any) -> tuple[bool, list[str]]:
    evidence.begin()
    ok = tc.says({"calls": [], "answer": text, "told_user": [text]}, *facts)
    return ok, evidence.take()


def not_says(text: str, *facts: Any) -> bool:
    evidence.begin()
    ok = tc.not_says({"calls": [], "answer": text, "told_user": [text]}, *facts)
    evidence.take()
    return ok


@pytest.mark.parametrize(("text", "fact", "why"), [
    ("Your order has not shipped.", "shipped", "negated"),
    ("You didn't pay $119.85.", 119.85, "negated"),
    ("You paid $129.85 (not $119.85).", 119.85, "negated"),
    ("You paid $129.85 instead of $119.85.", 119.85, "negated"),
    ("The coupon no longer expires on 2026-02-28.", "2026-02-28", "negated"),
    ("It probably shipped.", "shipped", "hedged"),
    ("It shipped with FedEx or UPS.", "FedEx", "alternative"),
    ("It shipped with UPS or FedEx.", "FedEx", "alternative"),
    ("It shipped with either FedEx or UPS.", "FedEx", "alternative"),
    ("You paid $119.85 or $129.85.", 119.85, "alternatives"),
    ("You paid $129.85 or maybe $119.85.", 119.85, "hedged"),
    ("It left on 2026-03-14 or 2026-03-15.", "2026-03-14", "alternatives"),
    ("The slot is at 10:00 or 10:30.", "10:00", "alternatives"),
    ("You paid between $110.00 and $119.85.", 119.85, "range"),
    ("It costs 60.00 to 65.00.", 65, "range"),
    ("Your total is one of $119.85, $129.85.", 119.85, "list"),
    ("Deleted after 14, 18, 21, 30 days.", 18, "list"),
    ("Did you pay $119.85?", 119.85, "question"),
    ("It shipped with FedEx and/or UPS.", "FedEx", "alternative"),
    ("It shipped on March 14-16.", "2026-03-14", "range"),
    ("I think it shipped with FedEx.", "FedEx", "hedged"),
    ("It takes 18 days or 21.", 18, "alternatives"),
    ("It takes 18 minutes or 21 minutes.", 18, "alternatives"),  # a unit of any length before "or"
    ("It takes 18 minutes to 21 minutes.", 21, "range"),
])
def test_a_mention_that_does_not_assert_its_fact_does_not_count(text: str, fact: Any, why: str) -> None:
    ok, evidence = says(text, fact)
    assert ok is False
    assert evidence[0].startswith(f"not counted {str(fact)!r}") and why in evidence[0], evidence


@pytest.mark.parametrize(("text", "fact"), [
    ("It is not delivered yet, but it shipped.", "shipped"),
    ("No, it shipped yesterday.", "shipped"),
    ("You can't borrow because you owe 36.75.", 36.75),
    ("Members can't borrow once fines reach 10.00.", 10),
    ("Instead of June 24 you'd pay 65.00.", 65),
    ("It shipped with FedEx, not UPS.", "FedEx"),
    ("You paid $119.85, not $129.85.", 119.85),
    ("It is not assigned to anyone.", "not assigned"),
    ("Refunds of $7.50 and $5.00.", 7.5),
    ("Appointments on 2026-04-07, 2026-04-08 and 2026-04-10.", "2026-04-08"),
    ("You have 2 orders, 3 coupons, 4 returns and 5 refunds.", 2),  # counts of four things, no list of candidates
    ("It might arrive Friday; it shipped on 2026-03-14.", "2026-03-14"),
    ("It shipped with FedEx. Anything else I can do?", "FedEx"),
    ("It shipped on March 14 (day 73 of the year).", "2026-03-14"),
])
def test_a_negation_or_hedge_about_something_else_leaves_the_fact_asserted(text: str, fact: Any) -> None:
    ok, evidence = says(text, fact)
    assert ok is True, evidence


@pytest.mark.parametrize(("text", "facts"), [
    ("WINTER25 saves $7.50. WELCOME15 expired on 2026-02-28.", ("WELCOME15", 7.5)),
    ("WELCOME15 expired on 2026-02-28, WINTER25 saves $7.50.", ("WINTER25", "expired")),
    ("Dr. Rahman on 2026-04-07, Dr. Kaplan on 2026-04-08.", ("Kaplan", "2026-04-07")),
    ("take1 goes in 21 days and take2 in 18 days.", ("take1", 18)),
    ("INC-3048, due 2026-03-14, is with Tariq Aziz, and INC-3040, due 2026-03-15, is open.",
     ("INC-3040", "Tariq Aziz")),
    ("INC-3040 and Tariq Aziz's INC-3048 are overdue.", ("INC-3040", "Tariq Aziz")),
    ("Dr. Rahman: 2026-04-07. Dr. Kaplan, at 09:00 on 2026-04-08.", ("Kaplan", "2026-04-07")),
    ("In the trash (take1: 21 days, take2: 18 days).", ("take1", 18)),
    ("WINTER25, the winter code, saves $7.50. WELCOME15 expired.", ("WELCOME15", 7.5)),
])
def test_facts_asked_together_must_be_stated_about_one_thing(text: str, facts: tuple[Any, ...]) -> None:
    ok, evidence = says(text, *facts)
    assert ok is False
    assert "not stated together" in evidence[-1], evidence


@pytest.mark.parametrize(("text", "facts"), [
    ("Order O-10046 has shipped. It went with FedEx (tracking FE2026031410046).", ("O-10046", "FedEx")),
    ("- Order: O-10046\n- Status: shipped\n- Carrier: FedEx", ("O-10046", "shipped", "FedEx")),
    ("Order O-1001 (2 items at $10.00 and $5.50) totals $25.50.", ("O-1001", 25.5)),
    ("Moving MR205 from June 24 to 2026-06-20 costs 65.00.", ("MR205", "2026-06-20")),
    ("Dr. Kaplan on 2026-04-07 (not 2026-04-08) at 10:00.", ("Kaplan", "2026-04-07", "10:00")),
    ("Dr. Kaplan on 2026-04-07 at 10:00 and Dr. Rahman on 2026-04-08 at 09:00.", ("Rahman", "2026-04-08")),
    ("WELCOME15 is valid. It saves $7.50, and SPRING10 saves $5.00.", ("WELCOME15", 7.5)),
    ("Order O-10046 went with FedEx under tracking FE2026031410046.", ("O-10046", "FedEx")),  # ids of other shapes
    # a date asked without its year is no rival to itself written with one
    ("Order O-1 shipped 2026-03-14 per the label dated 2026-03-14.", ("O-1", "March 14")),
])
def test_facts_stated_together_pass(text: str, facts: tuple[Any, ...]) -> None:
    ok, evidence = says(text, *facts)
    assert ok is True, evidence


def test_not_says_ignores_a_negated_mention_but_not_a_hedged_one() -> None:
    assert not_says("Dr. Nakamura (not Dr. Rahman) sees video patients.", "Rahman") is True
    assert not_says("Dr. Nakamura or Dr. Rahman sees video patients.", "Rahman") is False
    assert not_says("Dr. Rahman sees video patients.", "Rahman") is False


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("answers_bench", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_adversarial_answer_set_gets_the_verdicts_it_deserves() -> None:
    bench = _bench()
    scenarios = bench.read_only_scenarios()
    rows = bench.answer_set(DATA, scenarios)
    kinds = {r["kind"] for r in rows}
    assert len(rows) >= 50 and {"right", "reference", "hedge", "negation", "list", "inversion"} <= kinds
    wrong = []
    for row in rows:
        passed, why = bench.verdict(scenarios[row["scenario"]], row["answer"])
        if passed != (row["expect"] == "pass") and "limitation" not in row:
            wrong.append((row["kind"], row["answer"], why))
    assert wrong == []
    limits = [r for r in rows if "limitation" in r]
    assert all(bench.verdict(scenarios[r["scenario"]], r["answer"])[0] for r in limits)  # still a known miss


def test_a_date_stated_without_its_year_matches_on_month_and_day_only() -> None:
    assert says("It arrives on March 5.", "2026-03-05")[0]
    assert says("It arrives on 2026-03-05.", "2026-03-05")[0]
    assert not says("It arrives on March 6.", "2026-03-05")[0]
    assert not says("It arrives on March 5, 2025.", "2026-03-05")[0]  # a year given must be the year
