"""A task about a record the rules no longer let change is asked again about a record that can take the change.

The 1.5B model's tasks named a slot that was already booked ("Book … on April 7, 2026, at 10:30 AM") and a
booking whose ticket could no longer be cancelled, while other records of those collections could take the very
same change; every plan and each of its corrections made the change on the named record and was refused. No plan
can fix such a task. Here the refused call is tried again on the record's peers (the plan up to that call, the
record's id swapped for the peer's, each on a fresh episode of the real server): when the same call is accepted
on some, the task is at fault, and it is asked again naming one of them, the refusal given as the reason.

When the task also names a record the same call is accepted on, the plan is at fault (it changed the wrong one
of the task's records), not the task. A task that names the refused record by its id is sent back at once (before the plan is corrected); a task that
names it some other way (a date and a time) only once the plan's corrections were refused too (the plan kept the
record, so the task pins it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.references.replay import EpisodeFactory, replay_calls
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.scen.anchors import SETTLED, Anchor, asked_for, named_records, records, status_of
from envscaler_mcp.synth.scen.plan_fix import corrected_plan, first_refused
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.steps import StepContext

PROBES = 6  # peers tried at most per refused record (each one replay on a fresh episode)
TAKERS = 3  # peers that accept the call, at most, offered to the task


@dataclass(frozen=True)
class Misnamed:
    """A task's record the rules do not let change, the refused call, and peers on which that call is accepted."""

    record: Anchor  # as it is just before the refused call
    call: str  # `tool({arguments})`
    refusal: str
    takers: list[Anchor]  # none: every other record of the collection refused the call too
    others: list[Anchor] = field(default_factory=list)  # the call's other records (accepted with the takers)
    tried: list[str] = field(default_factory=list)  # the peers that refused it too (when no peer takes it)
    tool: str = ""  # the refused call's tool

    def reason(self) -> str:
        """What is wrong with the task, as a drop reason and a repair's feedback say it."""
        if not self.takers:
            return (f"the task asks for a change no record of this state allows: {self.call} was refused "
                    f"({self.refusal[:200]}), and so was the same call on every other {self.record.collection} "
                    f"({', '.join(self.tried)})")
        ids = ", ".join(a.record_id for a in self.takers)
        return (f"the task names {self.record.collection} {self.record.record_id}, which the rules do not let "
                f"change: {self.call} was refused ({self.refusal[:200]}), while the same call is accepted on "
                f"{self.record.collection} {ids}")

    def feedback(self) -> str:
        """The task step's feedback: the refusal, and the records to write the task about instead (or, when no
        record takes the change, to ask for another kind of change). The call itself is not shown: the 1.5B model
        copied it into its next task ("Call book_appointment({'patient_id': …})")."""
        kind, rid, refusal = self.record.collection, self.record.record_id, self.refusal[:200]
        if not self.takers:
            return (f"- the task asked for a change ({self.tool}) that no record of this state allows: {kind} {rid} "
                    f"refused it ({refusal}), and so did every other {kind} ({', '.join(self.tried)})\n"
                    f"- write a task that asks for a change of another kind, made with another tool than "
                    f"{self.tool}, that the rules allow on the records below as they are")
        lines = [f"- the task names {kind} {rid}, which the rules do not let change: {refusal}",
                 f"- write the task about one of these {kind} instead (the same change is allowed on them), "
                 f"naming it by its id, not {rid}:"]
        return "\n".join(lines + [f"  - {a.line()}" for a in self.takers])

    def anchors(self) -> list[Anchor] | None:
        """The records the new task is asked about: the first taker and the call's other records (None: the
        item's own, when no record takes the change)."""
        return [self.takers[0], *self.others][:2] if self.takers else None


def names_id(task: str, record_id: str) -> bool:
    """Whether the task text has the id as a word of its own (`O-2003`, not `O-20031`)."""
    return re.search(rf"(?<![\w-]){re.escape(record_id)}(?![\w-])", task) is not None


def swapped(value: Any, old: str, new: str) -> Any:
    """`value` (arguments) with every string equal to `old` replaced by `new`."""
    return swapped_all(value, {old: new})


def swapped_all(value: Any, ids: Mapping[str, str]) -> Any:
    """`value` (arguments) with every string that is a key of `ids` replaced by its value (all at once)."""
    if isinstance(value, dict):
        return {k: swapped_all(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [swapped_all(v, ids) for v in value]
    return ids[value] if isinstance(value, str) and value in ids else value


async def tried(plan: Sequence[ToolCall], ids: Mapping[str, str], state: State, episodes: EpisodeFactory
                ) -> str | None:
    """Replay `plan` with the record ids of `ids` swapped (each on a fresh episode of the real server at
    `state`): None when every call is accepted, else the refusal of the first refused call."""
    trial = [c.model_copy(update={"arguments": swapped_all(c.arguments, ids)}) for c in plan]
    made, _, reasons = await replay_calls(trial, state, episodes)
    if not reasons and len(made) == len(trial):
        return None
    return (made[-1].detail if made and not made[-1].ok else None) or (reasons[0] if reasons else "refused")


def _candidates(before: State, anchor: Anchor, refusal: str, task: str) -> list[Anchor]:
    """The record's peers, most likely takers first: the ones the task names, then the status the refusal asks
    for, then open ones."""
    peers = [a for a in records(before) if a.collection == anchor.collection and a.record_id != anchor.record_id]
    asked = asked_for(before, anchor, refusal, limit=len(peers))
    wanted = set(asked[1]) if asked else set()
    return sorted(peers, key=lambda a: (not names_id(task, a.record_id), a.record_id not in wanted,
                                        status_of(a.record) in SETTLED))


async def misnamed(task: str, plan: list[ToolCall], state: State, episodes: EpisodeFactory, changers: set[str],
                   by_id_only: bool) -> Misnamed | None:
    """The task's record that a refused state-changing call of `plan` acts on, when the same call is accepted on
    some of its peers; None when every call is accepted, the refused call only reads, or no peer takes it.
    `by_id_only`: only a record whose id the task text has. When no peer takes it, the record the refusal names
    by id (or the call's only record, not `by_id_only`), if every other record of its collection (at most
    PROBES) refused the call too: a task asking for a change no record allows (with no takers)."""
    found = await first_refused(plan, state, episodes)
    if found is None or found[1].tool not in changers:
        return None
    n, call, before = found
    named = named_records(before, call.arguments)
    text = f"call {n} {call.tool}({json.dumps(call.arguments, ensure_ascii=False)[:200]})"
    locked: Misnamed | None = None
    blamed = [a for a in named if names_id(call.detail or "", a.record_id)] or (named if len(named) == 1 else [])
    for anchor in named:
        if by_id_only and not names_id(task, anchor.record_id):
            continue
        takers: list[Anchor] = []
        peers = _candidates(before, anchor, call.detail or "", task)
        for peer in peers[:PROBES]:
            if (await tried(plan[:n], {anchor.record_id: peer.record_id}, state, episodes)) is None:
                takers.append(peer)
                if len(takers) == TAKERS:
                    break
        if any(names_id(task, a.record_id) for a in takers):  # the task names a record the call takes: the
            return None  # plan picked the wrong one of its records, which a plan correction mends
        others = [a for a in named if a.collection != anchor.collection]
        if takers:
            return Misnamed(anchor, text, call.detail or "refused", takers, others, tool=call.tool)
        at_once = names_id(call.detail or "", anchor.record_id)  # the task and the refusal both name it by id
        if (at_once or not by_id_only) and peers and len(peers) <= PROBES and anchor in blamed:
            locked = Misnamed(anchor, text, call.detail or "refused", [], others, [a.record_id for a in peers],
                              call.tool)
    return locked


class Retargeted(Exception):
    """The task names a record the rules do not let change (`misnamed`): it is asked again about a taker."""

    def __init__(self, draft: Draft, wrong: Misnamed) -> None:
        super().__init__(wrong.reason())
        self.draft = draft  # the task and what was built on it
        self.wrong = wrong


async def checked_plan(ctx: StepContext, episodes: EpisodeFactory, state: State, draft: Draft,
                       solution: list[ToolCall], meter: UsageMeter) -> tuple[list[ToolCall], list[str]]:
    """The plan, corrected when the environment refuses a call (`plan_fix.corrected_plan`), with the notes; or
    Retargeted when the task is at fault (`misnamed`): at once when it names the refused record by id and the
    call is accepted on other records, else once the plan's corrections were refused too (then also when no
    other record takes the call)."""
    changers = {t.name for t in ctx.skeleton.tools if t.kind == "state_change"}
    notes: list[str] = []
    wrong = await misnamed(draft.task, solution, state, episodes, changers, by_id_only=True)
    if wrong is None:
        solution, notes = await corrected_plan(ctx, episodes, state, draft.task, solution, meter)
        wrong = await misnamed(draft.task, solution, state, episodes, changers, by_id_only=False)
    if wrong is not None:
        raise Retargeted(draft.model_copy(update={"solution": solution, "notes": notes}), wrong)
    return solution, notes
