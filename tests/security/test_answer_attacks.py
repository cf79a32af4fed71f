"""An agent's answer cannot forge a transcript item: listing every candidate value states none of them, and a
hedged, negated or inverted answer does not state the facts it mentions (run through the validator sandbox)."""

from __future__ import annotations

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.transcript.record import make_transcript

pytestmark = pytest.mark.anyio

SAYS = "from transcript_checks import says\ndef check_func(transcript):\n    return says(transcript, 25.5, 'O-1001')\n"
ALL_AMOUNTS = "Your total is one of " + ", ".join(f"${c / 100:.2f}" for c in range(0, 5001)) + " (order O-1001)."
ALL_DAYS = "It arrives on one of: " + ", ".join(f"2026-03-{d:02d}" for d in range(1, 32)) + \
    ", " + ", ".join(f"2026-04-{d:02d}" for d in range(1, 31)) + "."
HONEST = ("Order O-1001 (2 items at $10.00 and $5.50, $10.00 shipping, 3 days) totals $25.50; "
          "your other order, O-1002, totals $12.00.")


async def verdicts(validator: str, *answers: str) -> list[tuple[bool, list[str]]]:
    item = ChecklistItem(id="c1", description="", validator=validator, kind="transcript")
    out = []
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=256) as sb:
        for answer in answers:
            [result] = await sb.run([item], {}, {}, transcript=make_transcript([], answer))
            out.append((result.passed, result.evidence))
    return out


async def test_a_list_of_every_candidate_states_none_of_them() -> None:
    dates = "from transcript_checks import says\ndef check_func(t):\n    return says(t, '2026-03-17')\n"
    [(shotgun, evidence)] = await verdicts(SAYS, ALL_AMOUNTS)
    assert shotgun is False and "a list of candidates" in evidence[0]
    [(days, _)] = await verdicts(dates, ALL_DAYS)
    assert days is False


async def test_an_answer_with_a_few_other_numbers_still_states_its_fact() -> None:
    [(honest, evidence)] = await verdicts(SAYS, HONEST)
    assert honest is True, evidence


KETTLE = ("from transcript_checks import says\ndef check_func(t):\n"
          "    return says(t, 'O-10046', 'shipped', 'FedEx') and says(t, 119.85)\n")
COUPON = ("from transcript_checks import says\ndef check_func(t):\n"
          "    return says(t, 'WINTER25', 'expired', '2026-02-28') and says(t, 'WELCOME15', 7.5)\n")


@pytest.mark.parametrize(("validator", "answer"), [
    (KETTLE, "Your order O-10046 has not shipped with FedEx yet, and you did not pay $119.85."),
    (KETTLE, "Order O-10046 shipped with FedEx or UPS; you paid $119.85 or $129.85."),
    (KETTLE, "Order O-10046 shipped with FedEx. You paid $129.85 (not $119.85)."),
    (KETTLE, "Order O-10046 shipped with FedEx. Your total is one of "
             + ", ".join(f"${d}.85" for d in range(109, 130)) + "."),
    (COUPON, "WINTER25 still works and saves $7.50. WELCOME15 expired on 2026-02-28."),
])
async def test_an_answer_that_hedges_negates_lists_or_inverts_the_facts_fails_in_the_sandbox(
        validator: str, answer: str) -> None:
    [(passed, evidence)] = await verdicts(validator, answer)
    assert passed is False
    assert any(e.startswith("not counted") for e in evidence), evidence


async def test_the_right_answer_in_other_words_passes_in_the_sandbox() -> None:
    right = ("Your order O-10046 hasn't been delivered yet, but it shipped with FedEx on March 14 "
             "(tracking FE2026031410046). You paid $119.85, not $129.85.")
    coupons = "WINTER25 expired on 2026-02-28, so it no longer works. WELCOME15 saves the most: $7.50."
    assert [p for p, _ in await verdicts(KETTLE, right)] == [True]
    assert [p for p, _ in await verdicts(COUPON, coupons)] == [True]
