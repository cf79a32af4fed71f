"""Multi-turn scenarios: checks judged at the end of a turn, and the state check after every turn.

The episode loop keeps, at the end of each turn but the last, where the transcript stood and the state
(harness/episode.py `_end_of_turn`). A checklist item a turn names is judged on that state and on the
transcript up to that point; every other item on the final state. The state after turn k is compared with
the reference solution's state after its turn-k calls (references.reference `Reference.check_turn`), unless the turn
says `check_state: false`; one failing turn fails the episode's state check. A turn the episode never reached
(it stopped early) fails both.
"""

from __future__ import annotations

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.harness.checks import Checker, episode_transcript
from envscaler_mcp.harness.models import CheckOutcome, TurnOutcome
from envscaler_mcp.providers.base import Message
from envscaler_mcp.references.reference import Reference, StateVerdict
from envscaler_mcp.scenario.models import ChecklistItem, Scenario

NOT_REACHED = "the episode ended before this turn did"
NOT_JUDGED = "the scenario does not judge the state at this turn (Turn.check_state is false)"


class TurnScoring:
    """What an episode kept at its turns' ends, and how to judge it."""

    def __init__(self, scenario: Scenario, marks: list[int], states: list[State | None], messages: list[Message],
                 reference: Reference | None) -> None:
        self.scenario = scenario
        self.marks, self.states, self.messages = marks, states, messages
        self.reference = reference
        self.last = len(scenario.turns) - 1

    def transcript_at(self, turn: int) -> JSONObject:
        """The transcript up to the end of `turn`: its calls, and the agent's answer to that turn."""
        upto = self.messages[: self.marks[turn]]
        answers = [m.content for m in upto if m.role == "assistant" and not m.tool_calls]
        return episode_transcript(upto, answers[-1] if answers else "")

    def state_checks(self, final: StateVerdict) -> tuple[list[TurnOutcome], StateVerdict]:
        """Each turn's state check (the last turn's is `final`), and the episode's: the first failing turn's
        verdict when one fails, else `final`."""
        if self.last < 1:
            return [], final
        outcomes: list[TurnOutcome] = []
        verdicts: list[StateVerdict] = []
        for k in range(self.last):
            if not self.scenario.turns[k].check_state:
                verdict = StateVerdict(status="not_available", reason=NOT_JUDGED)
            elif k >= len(self.marks):
                status = "fail" if self.reference is not None and not self.reference.reason else "not_available"
                verdict = StateVerdict(status=status, reason=NOT_REACHED)
            elif self.reference is None:
                verdict = StateVerdict(status="not_available", reason="no reference was computed for this run")
            else:
                verdict = self.reference.check_turn(k, self.states[k])
            verdicts.append(verdict)
        verdicts.append(final)
        for k, verdict in enumerate(verdicts):
            outcomes.append(TurnOutcome(turn=k + 1, reached=k < len(self.marks) or k == self.last,
                                        state_check=verdict.status, state_check_reason=verdict.reason,
                                        unexpected_changes=verdict.changes))
        failed = next((k for k, v in enumerate(verdicts) if v.status == "fail"), None)
        if failed is None or failed == self.last:
            return outcomes, final
        first = verdicts[failed]
        why = first.reason or "the state differs from the reference's"
        return outcomes, StateVerdict(status="fail", reason=f"turn {failed + 1} of {self.last + 1}: {why}",
                                      changes=first.changes, ignored=first.ignored)


async def score_turns(turns: TurnScoring, checker: Checker, final_state: State | None,
                      transcript: JSONObject | None) -> list[CheckOutcome]:
    """Every checklist item's verdict, in checklist order: items a turn names on that turn's state and
    transcript, the others (and those the last turn names) on the final ones, in one check of the checker."""
    scenario = turns.scenario
    at = scenario.item_turn()
    groups: dict[int, list[ChecklistItem]] = {}
    for item in scenario.checklist:
        groups.setdefault(min(at.get(item.id, turns.last), turns.last), []).append(item)
    verdicts: dict[str, CheckOutcome] = {}
    for turn, items in sorted(groups.items()):
        if turn == turns.last:
            outcomes = await checker.check(items, scenario.initial_state, final_state, transcript)
        elif turn >= len(turns.marks):
            outcomes = [CheckOutcome(id=i.id, description=i.description, status="fail", reason=NOT_REACHED,
                                     kind=i.kind) for i in items]
        else:
            outcomes = await checker.check(items, scenario.initial_state, turns.states[turn],
                                           turns.transcript_at(turn))
        verdicts.update((o.id, o) for o in outcomes)
    return [verdicts[item.id] for item in scenario.checklist]
