"""Plan-first items: when an item made the model-first way (task, checklist, validators, plan) is dropped, one
more is made the other way round, with the model writing only the task's words.

A small model's drafts fail mostly where four of its answers have to agree: the 1.5B model's checklists named
fields no record has and values no task asked for, its validators read other fields, its plans other records,
and every item of its run on the bundled environments was dropped (docs/synth-scenarios.md, code N). Here the
parts that must agree are made by code from one plan the real server accepted, and the model is asked for what
it does well, a user's request:

1. **The plan.** State-changing calls known to succeed in the environment (`feasible.known_for`: its
   scenarios' reference calls, the calls its dual-agent check saw succeed) are aimed at the records the task
   step would offer (`anchors.task_anchors`: open ones first), their other records swapped for records of this
   state where it lacks them, and replayed on a fresh episode of the real server (up to `MAX_CALLS` calls of
   different tools). A plan is kept when every call is accepted and every field it changes is a field of a record
   that exists (a scalar, or a free field: notes, generated timestamps), so each change can be said and checked.
2. **Checklist and validators** by code: one `[change]` item per changed field that is not free, "Has tickets
   INC-3001 priority 'P2'?", with the validator `item_check.FieldClaim` writes for it.
3. **The task** (`prompts/scen/task_from_plan.md`): the model is shown the records and the changes (free text
   included, so the request can say the note) and writes the request, naming the records by id and saying the
   new values. The prompt holds these records only, not the whole state: about a tenth of the task step's.
4. **The gate**, all of it, as for any draft: the task must name the records the plan changes (consistency),
   every validator False before and True after, the mutation test. A task the gate refuses is asked again once
   with the reasons. The scenario's provenance says it was made plan-first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.compare.diff import diff_states
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.references.replay import EpisodeFactory, replay_calls
from envscaler_mcp.scenario.models import ChecklistItem, ToolCall
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.scen.anchors import (
    SETTLED,
    Anchor,
    parameter_rules,
    records,
    status_of,
    task_anchors,
)
from envscaler_mcp.synth.scen.build import Dropped, ScenarioBuilder
from envscaler_mcp.synth.scen.checklist_fix import mentions
from envscaler_mcp.synth.scen.feasible import Known, stand_ins, targets
from envscaler_mcp.synth.scen.item_check import QUOTED, FieldClaim
from envscaler_mcp.synth.scen.parsers import TASK_SCHEMA, parse_task
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.retarget import swapped_all
from envscaler_mcp.synth.scen.steps import ANSWER_TOKENS, StepContext

MAX_CALLS = 1  # calls of a plan-first plan (the 1.5B model's requests for two calls lost values or the plot)
PROBES = 16  # replays tried at most to find it
MIN_WORDS = 8  # a request for the plan's changes may be short: it asks for exactly them
TASKS = 2  # the model's requests for the plan, at most (a refused one is asked again with the gate's reasons)
_SCALARS = (str, int, float, bool)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")  # a value that begins with an ISO date


@dataclass(frozen=True)
class Change:
    """One field of one record changed by the plan; `free`: a field any value of which is accepted."""

    collection: str
    record_id: str
    field: str
    old: Any
    new: Any
    free: bool
    added: bool = False  # a record the plan added: `new` holds its fields that are not free, `field` is ""

    def line(self) -> str:
        if self.added:
            return f"{self.collection}: a new record " + json.dumps(self.new, ensure_ascii=False, default=str)[:300]
        return f"{self.collection} {self.record_id}: {self.field} {_said(self.old)} -> {_said(self.new)}"


def _said(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)


def changes_of(state: State, final: State, free: FreeFields) -> list[Change] | None:
    """The plan's changes, or None when one cannot be said and checked: a field of an existing record (a scalar,
    or any change of a free field), or a record added to a collection keyed by id (its fields that are not free);
    not a record removed, a list changed in a field that is not free, a change outside the records."""
    found: list[Change] = []
    for change in diff_states(state, final):
        path = change.path
        if len(path) == 2 and change.op == "added" and isinstance(change.new, dict) and isinstance(
                state.get(str(path[0])), dict):
            collection, key = str(path[0]), str(path[1])
            kept = {f: v for f, v in change.new.items() if free.reason([collection, key, f]) is None}
            found.append(Change(collection, key, "", None, kept, False, added=True))
            continue
        if len(path) < 3 or not all(isinstance(p, str) for p in path[:3]):
            return None
        collection, key, field = (str(p) for p in path[:3])
        is_free = free.reason(path) is not None or free.reason(path[:3]) is not None
        scalar = len(path) == 3 and change.op == "changed" and (change.new is None or isinstance(change.new, _SCALARS))
        held = state.get(collection)
        if not (is_free or scalar) or not isinstance(held, dict) or key not in held:
            return None
        if len(path) == 3 or not any((c.collection, c.record_id, c.field) == (collection, key, field) for c in found):
            found.append(Change(collection, key, field, _field(state, collection, key, field),
                                _field(final, collection, key, field), is_free))
    return found


def _field(state: State, collection: str, key: str, field: str) -> Any:
    records_ = state.get(collection)
    record = records_.get(key) if isinstance(records_, dict) else None
    return record.get(field) if isinstance(record, dict) else None


def _shape(value: str) -> str:
    """A pattern of the id's shape: its letters and signs as they are, each run of digits any digits ("RF-307" ->
    `RF\\-\\d+`), so the next id the system chooses matches and a mangled one ("RF-307-x") does not."""
    return "".join(r"\d+" if part.isdigit() else re.escape(part) for part in re.split(r"(\d+)", value) if part)


def _added_source(collection: str, expected: dict[str, Any], shaped: dict[str, str]) -> str:
    """The validator of an added record: a record of `collection` the initial state lacks, with these fields, and
    the field holding its id of the shape the system's ids have (`shaped`: field -> pattern)."""
    return ("import re\n\n\n"
            "def check_func(final_state):\n"
            f"    records = final_state.get({collection!r})\n"
            f"    before = initial_state.get({collection!r}) or {{}}\n"
            f"    expected = {expected!r}\n"
            f"    shaped = {shaped!r}\n"
            "    if not isinstance(records, dict):\n"
            "        return False\n"
            "    for key, record in records.items():\n"
            "        if key not in before and isinstance(record, dict) and all(\n"
            "                record.get(field) == value for field, value in expected.items()) and all(\n"
            "                isinstance(record.get(field), str) and re.fullmatch(pattern, record[field])\n"
            "                for field, pattern in shaped.items()):\n"
            "            return True\n"
            "    return False\n")


def _own(change: Change) -> dict[str, Any]:
    """An added record's fields that are not free, less the id the system chose (the state check pairs added
    records by content: an agent's record under the next id is the same record)."""
    return {f: v for f, v in change.new.items() if v != change.record_id}


def _added_item(change: Change, said: Sequence[str]) -> str:
    """"Has a new appointments record been added with patient_id 'PT-1001' and slot_id '…'?": the fields whose
    values the plan's arguments say (at most 3; else the first two)."""
    own = _own(change)
    fields = [(f, v) for f, v in own.items() if isinstance(v, str) and v in said][:3] or \
        [(f, v) for f, v in own.items() if isinstance(v, _SCALARS)][:2]
    return (f"Has a new {change.collection} record been added with "
            + " and ".join(f"{f} '{v}'" for f, v in fields) + "?")


def checklist_for(found: Sequence[Change], said: Sequence[str] = ()) -> list[ChecklistItem]:
    """One [change] item per checked (not free) scalar change, and one per added record (`said`: the plan's text
    arguments, which name it), their validators written by code."""
    items: list[ChecklistItem] = []
    for change in (c for c in found if c.added):
        items.append(ChecklistItem(id=f"c{len(items) + 1}", description=_added_item(change, said),
                                   validator=_added_source(change.collection, _own(change), {
                                       f: _shape(v) for f, v in change.new.items() if v == change.record_id})))
    for change in (c for c in found if not c.added and not c.free and (c.new is None or isinstance(c.new, _SCALARS))):
        value = "no value" if change.new is None else f"'{str(change.new).lower()}'" if isinstance(
            change.new, bool) else f"'{change.new}'"
        claim = FieldClaim(change.collection, change.record_id, None, change.field, change.new)
        items.append(ChecklistItem(id=f"c{len(items) + 1}", description=f"Has {change.collection} "
                                   f"{change.record_id} {change.field} {value}?", validator=claim.source()))
    return items


def _aimed(known: Sequence[Known], changers: set[str], state: State, anchors: Sequence[Anchor]) -> list[ToolCall]:
    """Known state-changing calls aimed at the offered records first, then at the other open records of their
    collections (one call per tool and record)."""
    mine = records(state)
    offered = [a for a in anchors if a in mine]
    rest = [a for a in mine if a not in offered and status_of(a.record) not in SETTLED]
    by_collection = targets(known, changers)
    calls: list[ToolCall] = []
    for anchor in [*offered, *rest]:
        for options in by_collection.get(anchor.collection, {}).values():
            for item, target in options[:1]:
                ids = {**stand_ins(item, target, state), target.record_id: anchor.record_id}
                calls.append(item.call.model_copy(update={"arguments": swapped_all(item.call.arguments, ids)}))
    return list({(c.tool, repr(c.arguments)): c for c in calls}.values())


async def accepted_plan(state: State, known: Sequence[Known], changers: set[str], episodes: EpisodeFactory,
                        anchors: Sequence[Anchor], free: FreeFields) -> tuple[list[ToolCall], list[Change]] | None:
    """A plan of up to MAX_CALLS calls of different tools, every call accepted by the real server at `state`, and
    its changes (each one a field of an existing record, at least one checked); None when none is found."""
    plan: list[ToolCall] = []
    found: list[Change] = []
    probes = 0
    for call in _aimed(known, changers, state, anchors):
        if len(plan) == MAX_CALLS or probes == PROBES:
            break
        if any(c.tool == call.tool for c in plan) or not sayable(call):
            continue
        probes += 1
        _, final, reasons = await replay_calls([*plan, call], state, episodes)
        if reasons or final is None:
            continue
        changed = changes_of(state, dict(final), free)
        if changed is None or len(changed) <= len(found) or not checklist_for(changed):
            continue
        plan, found = [*plan, call], changed
    return (plan, found) if plan else None


def _values(plan: Sequence[ToolCall], found: Sequence[Change]) -> list[tuple[str, str]]:
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
        said = [f"{_one(kinds[v])} {v}" if isinstance(v, str) and v in kinds else f"{k.replace('_', ' ')} {_said(v)}"
                for k, v in call.arguments.items()]
        sentences.append(f"Please {call.tool.replace('_', ' ')}: {', '.join(said)}.")
    effects: dict[tuple[str, str], list[str]] = {}
    for c in said_changes(plan, found):
        if c.added or c.free:
            continue
        effects.setdefault((c.collection, c.record_id), []).append(
            f"no {c.field}" if c.new is None else f"{c.field} {_said(c.new)}")
    if effects:
        sentences.append("Afterwards " + "; ".join(f"{_one(collection)} {key} should have {' and '.join(parts)}"
                                                    for (collection, key), parts in effects.items()) + ".")
    return " ".join(sentences).replace(".'.", ".'")


def required(plan: Sequence[ToolCall], found: Sequence[Change]) -> list[str]:
    """What a request must contain: every id of a record it changes and the plan's other arguments (the records
    it names, the values it says). Not the values the change itself implies ("cancel my order" says 'cancelled')."""
    ids = [c.record_id for c in said_changes(plan, found) if not c.added]  # an added record's id: the system's
    return list(dict.fromkeys([*ids, *(v for _, v in _values(plan, found))]))


def _accept(plan: Sequence[ToolCall], found: Sequence[Change], plain: str) -> Callable[[str], tuple[str, str]]:
    """The request's reader: it must keep every required id and value (a copy of the plain request does; sent
    back for the user's own words, the 1.5B model answered "The configuration error occurred and the request
    could not be processed." twice)."""

    def accept(text: str) -> tuple[str, str]:
        title, task = parse_task(text, short=lambda task: len(task.split()) >= MIN_WORDS)  # the plan's changes
        missing = [m for m in required(plan, found) if not mentions(task, m)]
        if missing:
            raise AnswerFormatError("the request must contain, written exactly so: " + ", ".join(
                repr(m) for m in missing))
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
    return await ask(ctx.generator, "task", context, _accept(plan, found, plain), meter=meter, seat="task", retries=ctx.retries,
                     vary_repeats=True, settings=ctx.settings(answer=ANSWER_TOKENS["task"]),
                     template="scen/task_from_plan", schema=TASK_SCHEMA)


def plan_first_draft(title: str, task: str, plan: list[ToolCall], found: Sequence[Change], why: str,
                     worded: str = "") -> Draft:
    """The draft: the model's task (or, `worded`, the plain request and why), the checklist and validators by
    code, the accepted plan."""
    how = f"after the model-first item was dropped ({why[:200]})" if why else "before the model-first path"
    note = (f"made plan-first {how}: plan accepted by the server, checklist and validators written by code from its changes ("
            + "; ".join(c.line() for c in found)[:300] + "), "
            + (f"task worded by code, the plain request ({worded[:200]})" if worded else
               "task written by the model for them"))
    said = [v for _, v in _values(plan, found)]
    return Draft(title=title, task=task, checklist=checklist_for(found, said), solution=plan, notes=[note])


async def plan_first_item(builder: ScenarioBuilder, state: State, known: Sequence[Known], changers: set[str],
                          meter: UsageMeter, index: int, dropped: Dropped | None = None) -> Draft:
    """A draft made plan-first on `state` that passed the gate, or Dropped with the model-first item's reason
    (`dropped`; None: tried first) and why the plan-first one failed too. When the model's requests leave out what
    the plan needs, the plain request itself is the task, and the provenance says so."""
    ctx = builder.ctx
    why = "" if dropped is None else f"{dropped.step}: {dropped.reason}"

    def failed(reason: str) -> Dropped:
        return Dropped("plan-first", reason) if dropped is None else \
            Dropped(dropped.step, f"{dropped.reason} (plan-first: {reason})")

    changing = [t for t in ctx.planning_skeleton().tools if t.kind == "state_change"]
    rules = parameter_rules([(t.input_schema, t.description) for t in changing])
    anchors = task_anchors(state, index, [t.input_schema for t in changing], rules=rules)
    found = await accepted_plan(state, known, changers, builder.episode_factory, anchors,
                                FreeFields(ctx.skeleton.free_fields))
    if found is None:
        raise failed("no known call was accepted on this state with changes a checklist can say")
    plan, changes = found
    builder.say("plan-first: plan accepted, " + "; ".join(c.line() for c in changes)[:240])
    plain = plain_request(plan, changes, kinds_of(state))
    feedback, reasons = "", []
    for _ in range(TASKS):
        try:
            title, task = await task_for(ctx, state, plan, changes, meter, plain, feedback)
            draft = plan_first_draft(title, task, plan, changes, why)
        except StepFailed as exc:
            builder.say(f"plan-first: the model's requests were refused ({exc.reason[:200]}); the plain request "
                        "is the task")
            draft = plan_first_draft(f"{plan[0].tool.replace('_', ' ').capitalize()}", plain, plan, changes, why,
                                     worded=f"the model's requests were refused: {exc.reason}")
        verdict = await builder.evaluate(state, draft)
        if not verdict.reasons:
            return await builder.judged(state, draft, verdict.report, meter)
        reasons = verdict.reasons
        if draft.task == plain:
            break
        feedback = verdict.feedback or "\n".join(f"- {r}" for r in verdict.reasons)
    raise failed("the gate refused its task: " + "; ".join(reasons)[:300])
