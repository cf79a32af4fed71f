"""An agent's answer cannot forge a transcript item: listing every candidate value does not state one."""

from __future__ import annotations

import pytest

from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.scoring.sandbox import ValidatorSandbox
from envscaler_mcp.scoring.transcript import make_transcript

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
