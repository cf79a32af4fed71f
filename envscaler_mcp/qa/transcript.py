"""The QA gate's side of transcript items: the transcripts they are proven on, and the answer probes.

* The empty transcript (no call, an empty answer): every transcript item must be False on it, so an agent
  that does nothing fails (part of the initial-false step).
* The reference transcript: the reference solution as replayed (each call with its result) and the
  scenario's `reference_answer`; every transcript item must be True on it (part of the final-true step).
* Answer probes (a gate step of their own): each number, amount, date, time and id of the reference answer
  changed alone (every place it is stated), and each sentence that states one dropped alone; some transcript
  item must turn False on each.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.qa.mutation import Probe
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.transcript.facts import fact_spans
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT, call_record, make_transcript

__all__ = ["EMPTY_TRANSCRIPT", "answer_probes", "calls_transcript", "reference_transcript", "transcript_items"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n+")
_MAX_PROBES = 60


class _Replayed(Protocol):
    tool: str
    arguments: dict[str, Any]
    result_text: str
    is_error: bool


def transcript_items(scenario: Scenario) -> list[ChecklistItem]:
    """The scenario's transcript items, in order."""
    return [c for c in scenario.checklist if c.kind == "transcript"]


def reference_transcript(scenario: Scenario, replay: Sequence[_Replayed], convention: str = DEFAULT_CONVENTION
                         ) -> dict[str, Any]:
    """The transcript of replayed calls (with their results) followed by the scenario's reference answer (""
    when it has none): a correct agent's for the reference solution; for a wrong solution, an agent that does
    the wrong thing and says the right one."""
    calls = [call_record(c.tool, c.arguments, c.result_text, c.is_error) for c in replay]
    return make_transcript(calls, scenario.reference_answer or "", convention=convention)


def calls_transcript(scenario: Scenario, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """The transcript of calls whose results were not kept (each counted as succeeded), followed by the
    reference answer: how the gate's wrong-solution probes are judged."""
    return make_transcript([call_record(c.tool, c.arguments, "{}", False) for c in calls],
                           scenario.reference_answer or "", convention="no-error")


def _variants(answer: str) -> list[tuple[str, str]]:
    """(what was done, the changed answer): each fact changed alone (everywhere it is stated), then each
    fact-stating sentence dropped."""
    groups: dict[tuple[str, frozenset[Any]], list[Any]] = {}
    for span in fact_spans(answer):
        groups.setdefault((span.kind, span.keys), []).append(span)
    out = []
    for spans in groups.values():
        changed = answer
        for span in sorted(spans, key=lambda s: s.start, reverse=True):
            changed = changed[: span.start] + span.mutated + changed[span.end :]
        out.append((f"{spans[0].text!r} changed to {spans[0].mutated!r}", changed))
    sentences = [s for s in _SENTENCE_END.split(answer) if s and s.strip()]
    if len(sentences) > 1:
        for n, sentence in enumerate(sentences):
            if fact_spans(sentence):
                rest = " ".join(s.strip() for k, s in enumerate(sentences) if k != n)
                shown = sentence.strip() if len(sentence) <= 80 else sentence.strip()[:77] + "..."
                out.append((f"the sentence \u00ab{shown}\u00bb dropped", rest))
    return out


async def answer_probes(scenario: Scenario, transcript: dict[str, Any], final_state: Any,
                        sandbox: ValidatorSandbox) -> tuple[list[Probe], bool]:
    """Run the transcript items on each variant of the reference answer; (probes, truncated)."""
    items = transcript_items(scenario)
    answer = transcript.get("answer") or ""
    if not items or not answer:
        return [], False
    variants = _variants(answer)
    truncated = len(variants) > _MAX_PROBES
    variants = variants[:_MAX_PROBES]
    judged = await sandbox.run_probes(scenario.initial_state, [
        (items, final_state, {**transcript, "answer": changed, "told_user": [changed] if changed else []})
        for _, changed in variants])
    return [Probe(path="answer", mutation=description, caught_by=[r.item_id for r in results if not r.passed])
            for (description, _), results in zip(variants, judged, strict=True)], truncated
