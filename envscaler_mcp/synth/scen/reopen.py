"""A state refused for leaving no work to do (`feasible.py`) is mended by code before the model is asked again.

The 1.5B model, told "give some flights records status 'scheduled' and … departure after today (2026-06-15)", wrote
both flights departed on the same dates again, and told to give some appointments status 'scheduled' it wrote them
all `completed`: the feedback names a mechanical change, which code can make. For each closed collection whose
refusal says what the known calls were accepted on (`Closed.accepted`, the commonest status first; `Closed.later`,
the date fields after their state's `today`), half of its records (at least one) are reopened, of those whose dates
to move are held nowhere else (in the record's id, slot `D01-2026-04-07-1030`; in a record it names, an
appointment's slot of that day; in a record naming it, the completed appointment of that day on a slot) and that
keep no value of their closing (a returned loan's `returned_on`, a cancelled visit's `cancel_reason`): records no
other record names first, so that none becomes inconsistent with them (a ticket on a flight), then the rest. A
collection with no such record is not reopened. A reopened record takes that status, and those date fields move by
one number of days so that the earliest is as far after the state's `today` as the calls' records were
(`Closed.ahead`, the median; a day more for each record reopened before it), keeping each value's time of day and
format. The mended state is kept only when it still fits the schema, names no missing record, and is judged again on
the real server and not refused.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import date, timedelta

from envscaler_mcp._json import State
from envscaler_mcp.qa.record_index import strings_of
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen.anchors import Anchor, records, status_of
from envscaler_mcp.synth.scen.feasible import Closed, Judgement
from envscaler_mcp.synth.skel.checkstage import accept_initial_state


def reopened(state: State, closed: Sequence[Closed]) -> tuple[State, list[str]] | None:
    """A copy of `state` with some records of each closed collection reopened, and a line per collection
    ("reopened 1 of 2 flights (status 'scheduled', arrival and departure after today)"); None when no closed
    collection says what its records need."""
    mended = copy.deepcopy(state)
    every = records(mended)
    lines: list[str] = []
    changed: set[str] = set()  # the ids of the records reopened so far
    for found in closed:
        if not found.accepted and not (found.later and found.today):
            continue
        mine = [a for a in every if a.collection == found.collection]
        named = {value for a in every if a.collection != found.collection for _, value in strings_of(a.record)}
        free = [a for a in mine if not _dates_held(a, found, every) and not _closing_kept(a, found)
                and not _linked_to(a, changed, every)]
        chosen = sorted(free, key=lambda a: a.record_id in named)[:max(1, len(mine) // 2)]
        if not chosen:
            continue
        for order, anchor in enumerate(chosen):
            _reopen(anchor, found, order)
        changed |= {a.record_id for a in chosen}
        lines.append(_line(found, len(chosen), len(mine)))
    return (mended, lines) if lines else None


def _linked_to(anchor: Anchor, changed: set[str], every: Sequence[Anchor]) -> bool:
    """Whether the record names, or is named by, a record already reopened: of two linked records only one takes
    a new status (a copy made `available` under a loan made `active` on it would be lent and free at once)."""
    if not changed:
        return False
    own = {value for _, value in strings_of(anchor.record)} - {anchor.record_id}
    return bool(own & changed) or any(
        other.record_id in changed and anchor.record_id in {value for _, value in strings_of(other.record)}
        for other in every if other is not anchor)


def _dates_held(anchor: Anchor, found: Closed, every: Sequence[Anchor]) -> bool:
    """Whether a date the reopening would move is also held elsewhere, where it would then be wrong: in the
    record's id (slot `D01-2026-04-07-1030`), in a record it names (an appointment's slot of that day) or in a
    record naming it (the completed appointment of that day on a slot)."""
    days = {record[:10] for name in found.later if isinstance(record := anchor.record.get(name), str)}
    if not found.today or not days:
        return False
    if any(day in anchor.record_id or day.replace("-", "") in anchor.record_id for day in days):
        return True
    refs = {value for _, value in strings_of(anchor.record)} - {anchor.record_id}
    linked = [other for other in every if other is not anchor and (
        other.record_id in refs or anchor.record_id in {value for _, value in strings_of(other.record)})]
    return any(value[:10] in days for other in linked for _, value in strings_of(other.record))


def _closing_kept(anchor: Anchor, found: Closed) -> bool:
    """Whether the record keeps a value its closing gave it, in a field named after its status (a returned loan's
    `returned_on`, a cancelled visit's `cancel_reason`): reopened, it would be open and closed at once."""
    status = status_of(anchor.record) or ""
    return bool(status) and any(
        value not in (None, "", [], {}, False, 0) and name not in found.later
        and any(word == status or (len(word) >= 5 and status.startswith(word)) for word in name.lower().split("_"))
        for name, value in anchor.record.items() if name not in ("status", "state"))


def _reopen(anchor: Anchor, found: Closed, order: int) -> None:
    """The record (in place): an accepted status, and its `later` date fields moved after `today` (a day later
    for each record reopened before it, so that two reopened records do not fall on one day)."""
    record = anchor.record
    if found.accepted:
        record["status" if "status" in record or "state" not in record else "state"] = found.accepted[0]
    fields = [name for name in found.later if isinstance(record.get(name), str)]
    if not fields or not found.today:
        return
    earliest = min(date.fromisoformat(record[name][:10]) for name in fields)
    shift = timedelta(days=(date.fromisoformat(found.today[:10]) - earliest).days + max(found.ahead, 1) + order)
    for name in fields:
        value: str = record[name]
        record[name] = (date.fromisoformat(value[:10]) + shift).isoformat() + value[10:]


def _line(found: Closed, count: int, total: int) -> str:
    what = [f"status {found.accepted[0]!r}"] if found.accepted else []
    if found.later and found.today:
        what.append(f"{' and '.join(found.later)} after today")
    return f"reopened {count} of {total} {found.collection} ({', '.join(what)})"


async def reopen_state(skeleton: EnvSkeleton, state: State, judgement: Judgement,
                       judge: Callable[[State], Awaitable[Judgement]]) -> tuple[State, list[str]] | None:
    """The refused `state` reopened (`reopened`), if it then fits the schema, names no record it lacks and
    `judge` (the probes of `feasible.judge_state`) no longer refuses it; else None (the model is asked again)."""
    found = reopened(state, judgement.closed)
    if found is None:
        return None
    mended, lines = found
    try:
        accept_initial_state(skeleton, json.dumps(mended))  # the schema, and no record naming a missing one
    except AnswerFormatError:
        return None
    return None if (await judge(mended)).refused else (mended, lines)
