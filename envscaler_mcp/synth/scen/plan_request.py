"""The request of a plan-first item (`plan_first.py`): a plain request made by code in the user's voice, what
any wording of it must keep, and the model's wording of it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence

from envscaler_mcp._json import State
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import UsageMeter, ask
from envscaler_mcp.synth.scen.anchors import records
from envscaler_mcp.synth.scen.checklist_fix import mentions
from envscaler_mcp.synth.scen.item_check import QUOTED
from envscaler_mcp.synth.scen.parsers import TASK_SCHEMA, parse_task
from envscaler_mcp.synth.scen.plan_changes import Change, said_value
from envscaler_mcp.synth.scen.steps import ANSWER_TOKENS, StepContext

MIN_WORDS = 8  # a request for the plan's changes may be short: it asks for exactly them
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # a value that begins with an ISO date


def decided_values(plan: Sequence[ToolCall], found: Sequence[Change]) -> list[tuple[str, str]]:
    """(argument, value) of the plan's arguments other than the ids of the records it changes: what the user
    decides (a return's condition, a quantity, the patient a booking is for), which the request must say."""
    ids = {c.record_id for c in found if not c.added}
    return list(dict.fromkeys((k, str(v)) for call in plan for k, v in call.arguments.items()
                              if isinstance(v, str | int | float) and not isinstance(v, bool) and str(v)
                              and str(v) not in ids))


def sayable(call: ToolCall) -> bool:
    """Whether a request can say every argument of `call` plainly: texts and numbers, not lists, objects or
    flags (a plan whose order items or passenger lists the request would leave out could not be done from it)."""
    return all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in call.arguments.values())


def said_changes(plan: Sequence[ToolCall], found: Sequence[Change]) -> list[Change]:
    """The changes a user asks for: those of the records the plan's calls name, or the records it adds when that
    is all it does. Left to the system: what it changes in other records (the stock a cancellation puts back),
    the records it adds beside its changes (a comment), and the dates it sets (a cancellation's date), which the
    1.5B model's plain request told the agent to set. The checklist still checks them all."""
    named = {str(v) for call in plan for v in call.arguments.values() if isinstance(v, str | int | float)}
    only_added = all(c.added for c in found)
    said = [c for c in found
            if (c.added and only_added)
            or (not c.added and c.record_id in named
                and not (isinstance(c.new, str) and _DATE.match(c.new) and c.new not in named))]
    return said or list(found)


def _one(collection: str) -> str:
    """A record of the collection: "copies" -> "copy", "tickets" -> "ticket"."""
    if collection.endswith("ies"):
        return collection[:-3] + "y"
    return collection[:-1] if collection.endswith("s") and not collection.endswith("ss") else collection


def kinds_of(state: State) -> dict[str, str]:
    """id -> collection of the records whose id names one collection only (hospital doctors, locations and
    appointments all keyed '1', '2', …: such an argument is said by its name, "doctor id '2'")."""
    seen: dict[str, set[str]] = {}
    for anchor in records(state):
        seen.setdefault(anchor.record_id, set()).add(anchor.collection)
    return {key: next(iter(kinds)) for key, kinds in seen.items() if len(kinds) == 1}


def plain_request(plan: Sequence[ToolCall], found: Sequence[Change], kinds: Mapping[str, str] | None = None) -> str:
    """The request made by code, in the user's voice: each call's action named after its tool, its arguments (the
    records by kind and id: `kinds`, id -> collection), and the changes asked for ("Please return asset: asset
    AST-2001, condition 'damaged'. Afterwards asset AST-2001 should have status 'in_repair' and no assigned_to.")."""
    kinds = kinds or {}
    sentences = []
    for call in plan:
        said = [f"{_one(kinds[v])} {v}" if isinstance(v, str) and v in kinds else f"{k.replace('_', ' ')} {said_value(v)}"
                for k, v in call.arguments.items()]
        sentences.append(f"Please {call.tool.replace('_', ' ')}: {', '.join(said)}.")
    effects: dict[tuple[str, str], list[str]] = {}
    for c in said_changes(plan, found):
        if c.added or c.free:
            continue
        effects.setdefault((c.collection, c.record_id), []).append(
            f"no {c.field}" if c.new is None else f"{c.field} {said_value(c.new)}")
    if effects:
        sentences.append("Afterwards " + "; ".join(f"{_one(collection)} {key} should have {' and '.join(parts)}"
                                                    for (collection, key), parts in effects.items()) + ".")
    return " ".join(sentences).replace(".'.", ".'")


def required(plan: Sequence[ToolCall], found: Sequence[Change]) -> list[str]:
    """What a request must contain: every id of a record it changes and the plan's other arguments (the records
    it names, the values it says). Not the values the change itself implies ("cancel my order" says 'cancelled')."""
    ids = [c.record_id for c in said_changes(plan, found) if not c.added]  # an added record's id: the system's
    return list(dict.fromkeys([*ids, *(v for _, v in decided_values(plan, found))]))


_SHORT = re.compile(r"\d{1,4}|\w{1,2}")  # a value a reader cannot tell apart from another of its kind by itself


def labelled(plan: Sequence[ToolCall], found: Sequence[Change], kinds: Mapping[str, str]) -> list[tuple[str, str]]:
    """(argument, value) of the required values a request must say with what they are: short ones ('1', '12')
    that do not name one kind of record. Said bare, two of them can trade places unseen ("doctor 1 at
    location 2" for doctor '2' at location '1': both values are there)."""
    needed = set(required(plan, found))
    return list(dict.fromkeys((k, str(v)) for call in plan for k, v in call.arguments.items()
                              if str(v) in needed and _SHORT.fullmatch(str(v)) and str(v) not in kinds))


def says_with_label(text: str, argument: str, value: str) -> bool:
    """Whether `text` says `value` with its argument's name beside it: "doctor 2", "doctor id '2'",
    "location #1", "2 slots" (the name without a trailing "_id", in either order)."""
    name = r"[ _-]?".join(re.escape(part) for part in re.sub(r"_id$", "", argument).split("_"))
    quoted = rf"['\"‘“]?{re.escape(value)}['\"’”]?"
    before = rf"\b{name}(?:[ _-]?ids?)?\s*(?:#|no\.?|number)?\s*[:=]?\s*{quoted}(?!\w)(?![.-]\w)"
    after = rf"(?<!\w)(?<!\w[.-]){quoted}\s+{name}"
    return re.search(f"{before}|{after}", text, re.IGNORECASE) is not None


def _accept(plan: Sequence[ToolCall], found: Sequence[Change], plain: str,
            kinds: Mapping[str, str] | None = None) -> Callable[[str], tuple[str, str]]:
    """The request's reader: it must keep every required id and value (a copy of the plain request does; sent
    back for the user's own words, the 1.5B model answered "The configuration error occurred and the request
    could not be processed." twice)."""

    def accept(text: str) -> tuple[str, str]:
        title, task = parse_task(text, short=lambda task: len(task.split()) >= MIN_WORDS)  # the plan's changes
        missing = [m for m in required(plan, found) if not mentions(task, m)]
        if missing:
            raise AnswerFormatError("the request must contain, written exactly so: " + ", ".join(
                repr(m) for m in missing))
        bare = [(k, v) for k, v in labelled(plan, found, kinds or {}) if not says_with_label(task, k, v)]
        if bare:
            raise AnswerFormatError("the request must say each of these with what it is, written so: " + ", ".join(
                repr(f"{k.replace('_', ' ')} {said_value(v)}") for k, v in bare))
        extra = [q for q in QUOTED.findall(task) if q.strip().lower() not in plain.lower()]
        if extra:  # a value the plan does not set or use: a change it does not make
            raise AnswerFormatError("the request must ask only for the changes of the plain request; it also says "
                                    + ", ".join(repr(q) for q in extra[:3]))
        return title, task
    return accept


async def task_for(ctx: StepContext, state: State, plan: Sequence[ToolCall], found: Sequence[Change],
                   meter: UsageMeter, plain: str, feedback: str = "") -> tuple[str, str]:
    """(title, task): the model's wording of `plain_request`, which must keep every id and checked text value."""
    touched = {(c.collection, c.record_id) for c in found}
    lines = [a.line() for a in records(state) if (a.collection, a.record_id) in touched]
    calls = [f"{c.tool}({json.dumps(c.arguments, ensure_ascii=False)[:300]})" for c in plan]
    context = {"summary": ctx.skeleton.summary, "records": lines, "calls": calls, "plain": plain,
               "feedback": feedback}
    return await ask(ctx.generator, "task", context, _accept(plan, found, plain, kinds_of(state)), meter=meter, seat="task", retries=ctx.retries,
                     vary_repeats=True, settings=ctx.settings(answer=ANSWER_TOKENS["task"]),
                     template="scen/task_from_plan", schema=TASK_SCHEMA)
