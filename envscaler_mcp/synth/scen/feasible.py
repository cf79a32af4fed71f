"""A generated initial state in which the environment's work cannot be done is sent back at the state step.

The 1.5B model wrote a `clinic_appointments` state whose every slot was booked and every appointment completed,
and a `flight_bookings` state whose both flights had departed before its `today`: no booking, cancellation,
rescheduling or seat choice could succeed on any of their records, and both items were dropped at the gate
twenty minutes later, after three tasks asking for such changes. Here each collection of the state is probed on
the real server, as `retarget.py` probes a refused call's peers: a state-changing call known to succeed (a
reference call of the environment's scenarios, or a call its dual-agent check saw succeed) is replayed with
its record's id swapped for each record of that collection in the new state (the call's other records, when
the new state lacks them, for one it has), each on a fresh episode.

The rule. A collection is judged when its records carry a status and at least `MIN_TOOLS` state-changing tools
have a known call naming one of its records (a call accepted alone on the state it came from, at most
`TEMPLATES_PER_TOOL` per tool). It is *open* when some of those calls is accepted on some of its records (one of
each status first, at most `PROBES`), else *closed*. **A state is refused when more of its judged collections are
closed than open**, with a line per closed collection built from the refusals' messages and from what the
records the calls were accepted on had (their status, dates after their state's `today`), so the model can give
some records a status and dates those calls accept. One closed collection beside open ones (every fine paid,
every return settled) is a normal state; a collection no known call names, or one without status, is never
judged: a state is refused only on evidence. On the catalog's 89 states and the recorded runs' 44, none is
refused (`benchmarks/state_work.py`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from statistics import median

from envscaler_mcp._json import State
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.synth.scen.anchors import SETTLED, Anchor, named_records, records, status_of
from envscaler_mcp.synth.scen.retarget import PROBES, tried
from envscaler_mcp.synth.scen.steps import StepContext

MIN_TOOLS = 2  # state-changing tools with a known call on a collection's records before it is judged
TEMPLATES_PER_TOOL = 2  # known calls tried per (tool, collection)


@dataclass(frozen=True)
class Known:
    """A state-changing call known to succeed, and the state it succeeded on (its records' ids are read there)."""

    call: ToolCall
    state: State


@dataclass
class Closed:
    """A collection of the state on which every state-changing call tried was refused."""

    collection: str
    statuses: list[str]
    refusals: dict[str, str] = field(default_factory=dict)  # tool -> the first refusal's message
    tried: list[str] = field(default_factory=list)  # the record ids tried
    accepted: list[str] = field(default_factory=list)  # statuses of the records the known calls succeeded on
    later: list[str] = field(default_factory=list)  # date fields after `today` there, on or before it here
    today: str = ""
    ahead: int = 7  # days after their state's `today` those fields were there (the median; 7 when unknown)

    def line(self) -> str:
        tools = "; ".join(f"{tool}: {why[:160]}" for tool, why in self.refusals.items())
        kind = self.collection
        text = (f"every {kind} record tried ({', '.join(self.tried)}; status {', '.join(self.statuses)}) refused "
                f"every change asked of it ({tools})")
        wanted = [f"status {' or '.join(repr(s) for s in self.accepted)}"] if self.accepted else []
        wanted += [f"{name} after today ({self.today})" for name in self.later]
        if not wanted:
            return f"{text}: give some {kind} records a status and dates those changes accept"
        return (f"{text}: give some {kind} records {' and '.join(wanted)} (the same changes were accepted on "
                f"such records)")


def _hints(found: Closed, tools: dict[str, list[tuple[Known, Anchor]]], mine: list[Anchor], state: State) -> None:
    """What the records the known calls were accepted on had that this state's lack: their statuses, and date
    fields after their state's `today` where every record here has that field on or before this `today`."""
    seen = Counter(s for calls in tools.values() for _, target in calls if (s := status_of(target.record)) is not None)
    found.accepted = sorted(set(seen) - set(found.statuses), key=lambda s: (-seen[s], s))  # the commonest first
    today = state.get("today")
    if not isinstance(today, str):
        return
    found.today = today
    later: dict[str, list[int]] = {}  # field -> days after `today` there
    for calls in tools.values():
        for item, target in calls:
            then = item.state.get("today")
            for name, value in target.record.items():
                if isinstance(then, str) and _date(value) and _date(then) and str(value)[:10] > then[:10]:
                    later.setdefault(name, []).append((_day(str(value)) - _day(then)).days)
    found.later = sorted(name for name in later
                         if all(_date(a.record.get(name)) and str(a.record[name])[:10] <= today[:10] for a in mine))
    if found.later:
        found.ahead = int(median(days for name in found.later for days in later[name]))


def _day(value: str) -> date:
    return date.fromisoformat(value[:10])


def _date(value: object) -> bool:
    """A text that begins with an ISO date (a date, or a date and time)."""
    if not isinstance(value, str) or re.match(r"\d{4}-\d{2}-\d{2}", value) is None:
        return False
    try:
        _day(value)
    except ValueError:  # 2026-02-30
        return False
    return True


def targets(known: Iterable[Known], changers: set[str]) -> dict[str, dict[str, list[tuple[Known, Anchor]]]]:
    """{collection: {tool: [(known call, its record of that collection)]}} for the state-changing calls."""
    found: dict[str, dict[str, list[tuple[Known, Anchor]]]] = {}
    for item in known:
        if item.call.tool not in changers:
            continue
        for anchor in named_records(item.state, item.call.arguments):
            found.setdefault(anchor.collection, {}).setdefault(item.call.tool, []).append((item, anchor))
    return found


def stand_ins(item: Known, target: Anchor, state: State) -> dict[str, str]:
    """The known call's other records that the new state lacks, each for a record of its collection the state
    has (an open one first)."""
    have = records(state)
    ids = {a.record_id for a in have}
    swaps: dict[str, str] = {}
    for other in named_records(item.state, item.call.arguments):
        if other.record_id == target.record_id or other.record_id in ids:
            continue
        peers = sorted((a for a in have if a.collection == other.collection),
                       key=lambda a: status_of(a.record) in SETTLED)
        if peers:
            swaps[other.record_id] = peers[0].record_id
    return swaps


@dataclass
class Judgement:
    """The collections of a state that were judged: closed (no known call accepted on them) and open."""

    closed: list[Closed] = field(default_factory=list)
    open: list[str] = field(default_factory=list)

    @property
    def refused(self) -> bool:
        """The rule: more of the judged collections are closed than open."""
        return len(self.closed) > len(self.open)


async def judge_state(state: State, known: Sequence[Known], changers: set[str], episodes: EpisodeFactory
                      ) -> Judgement:
    """Each collection of `state` with a status that at least MIN_TOOLS known state-changing calls name, judged
    open (some call accepted on one of its records) or closed."""
    by_collection: dict[str, list[Anchor]] = {}
    for anchor in records(state):
        by_collection.setdefault(anchor.collection, []).append(anchor)
    judgement = Judgement()
    usable: dict[int, bool] = {}
    for collection, candidates in targets(known, changers).items():
        mine = by_collection.get(collection, [])
        statuses = sorted({s for a in mine if (s := status_of(a.record))})
        if not mine or not statuses:
            continue
        tools = {tool: calls for tool, options in candidates.items()
                 if (calls := await _usable(options, episodes, usable))}
        if len(tools) < MIN_TOOLS:
            continue
        peers = _spread(mine)
        found = Closed(collection, statuses, tried=[a.record_id for a in peers])
        if await _accepted_somewhere(found, tools, peers, state, episodes):
            judgement.open.append(collection)
        else:
            _hints(found, tools, mine, state)
            judgement.closed.append(found)
    return judgement


async def _usable(options: list[tuple[Known, Anchor]], episodes: EpisodeFactory, usable: dict[int, bool]
                  ) -> list[tuple[Known, Anchor]]:
    """The first TEMPLATES_PER_TOOL known calls accepted alone on the state they came from (a later call of a
    plan may name a record an earlier call made, or need a change an earlier call made); `usable` by id."""
    kept: list[tuple[Known, Anchor]] = []
    for item, target in options:
        if id(item) not in usable:
            usable[id(item)] = await tried([item.call], {}, item.state, episodes) is None
        if usable[id(item)]:
            kept.append((item, target))
            if len(kept) == TEMPLATES_PER_TOOL:
                break
    return kept


def _spread(mine: list[Anchor]) -> list[Anchor]:
    """At most PROBES records: one of each status first (open ones before settled ones), then the rest."""
    firsts = {status_of(a.record): a for a in reversed(mine)}
    ordered = sorted(firsts.values(), key=lambda a: status_of(a.record) in SETTLED)
    return (ordered + [a for a in mine if a not in ordered])[:PROBES]


async def _accepted_somewhere(found: Closed, tools: dict[str, list[tuple[Known, Anchor]]], peers: list[Anchor],
                              state: State, episodes: EpisodeFactory) -> bool:
    """Whether some known call is accepted on some of `peers`; the refusals are noted in `found`."""
    for tool, calls in tools.items():
        for item, target in calls:
            others = stand_ins(item, target, state)  # the same for every peer
            for peer in peers:
                refusal = await tried([item.call], {**others, target.record_id: peer.record_id}, state, episodes)
                if refusal is None:
                    return True
                found.refusals.setdefault(tool, refusal)
    return False


def closed_reason(judgement: Judgement, state: State) -> str:
    """The state step's feedback for a refused state ("" when it is not refused)."""
    if not judgement.refused:
        return ""
    today = state.get("today")
    when = f" (the state's today is {today})" if isinstance(today, str) else ""
    return ("the initial state leaves no work to do" + when + ": no task could change its records, the system's "
            "rules refused every change tried on them. Write a state in which these records allow changes:\n  - "
            + "\n  - ".join(c.line() for c in judgement.closed))


def known_calls(reference_runs: Iterable[tuple[State, Sequence[ToolCall]]]) -> list[Known]:
    """The calls of reference solutions (each with the initial state it started from)."""
    return [Known(call, state) for state, calls in reference_runs for call in calls]


def known_for(ctx: StepContext, scenarios: Sequence[Scenario]) -> list[Known]:
    """The state-changing calls known to succeed in an environment: its scenarios' reference calls, and the calls
    its dual-agent check saw succeed (on the environment's default state, the state that check ran on)."""
    checked = [ToolCall(tool=c.tool, arguments=c.arguments) for c in ctx.succeeded()]
    return known_calls([(s.initial_state, s.reference_solution) for s in scenarios]
                       + [(ctx.skeleton.default_state or {}, checked)])
