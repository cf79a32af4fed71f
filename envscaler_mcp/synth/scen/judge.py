"""The checker model's judgement of a scenario that passed the gate: does its reference solution do exactly what
its task asks, and nothing else? Asked when `synth scenarios --judge` gives the gate a model; a "no" drops the
scenario, a "yes" is recorded in its provenance notes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from envscaler_mcp._json import JSONObject
from envscaler_mcp.synth._common_parse import AnswerFormatError, extract_json
from envscaler_mcp.synth.llm import UsageMeter, ask
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.steps import StepContext

JUDGE_SCHEMA: JSONObject = {
    "type": "object", "additionalProperties": False, "required": ["analysis", "verdict", "reason"],
    "properties": {"analysis": {"type": "string", "maxLength": 1200}, "verdict": {"enum": ["yes", "no"]},
                   "reason": {"type": "string", "maxLength": 400}},
}


@dataclass(frozen=True)
class Judgement:
    """The checker model's answer."""

    verdict: Literal["yes", "no"]
    reason: str
    model: str

    def note(self) -> str:
        """The provenance note of a kept scenario."""
        return f"checker judgement ({self.model}): the solution does exactly what the task asks: {self.reason}"


def parse_judgement(text: str) -> tuple[Literal["yes", "no"], str]:
    """{"verdict": "yes"|"no", "reason": ...} -> (verdict, reason); anything else is sent back."""
    data = extract_json(text)
    verdict = str(data.get("verdict", "")).strip().lower()
    if verdict not in ("yes", "no"):
        raise AnswerFormatError('"verdict" must be "yes" or "no"')
    return ("yes" if verdict == "yes" else "no"), str(data.get("reason", "")).strip()


async def judge_solution(ctx: StepContext, draft: Draft, changes: str, meter: UsageMeter) -> Judgement:
    """Ask the checker seat (the generator model) whether `draft`'s solution does exactly what its task asks."""
    calls = [f"{c.tool}({json.dumps(c.arguments, ensure_ascii=False)})" for c in draft.solution]
    verdict, reason = await ask(ctx.generator, "judge", {"summary": ctx.skeleton.summary, "task": draft.task,
                                                        "calls": calls, "changes": changes},
                                parse_judgement, meter=meter, seat="judge", retries=ctx.retries,
                                settings=ctx.settings(0.0, 600), template="scen/judge", schema=JUDGE_SCHEMA)
    return Judgement(verdict, reason, ctx.generator.spec)
