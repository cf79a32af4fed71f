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

from collections.abc import Sequence

from envscaler_mcp._json import State
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.references.replay import EpisodeFactory, replay_calls
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.anchors import (
    SETTLED,
    Anchor,
    parameter_rules,
    records,
    status_of,
    task_anchors,
)
from envscaler_mcp.synth.scen.build import Dropped, ScenarioBuilder
from envscaler_mcp.synth.scen.feasible import Known, stand_ins, targets
from envscaler_mcp.synth.scen.plan_changes import Change, changes_of, checklist_for
from envscaler_mcp.synth.scen.plan_request import decided_values, kinds_of, plain_request, sayable, task_for
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.retarget import swapped_all

MAX_CALLS = 1  # calls of a plan-first plan (the 1.5B model's requests for two calls lost values or the plot)
PROBES = 16  # replays tried at most to find it
TASKS = 2  # the model's requests for the plan, at most (a refused one is asked again with the gate's reasons)


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


def plan_first_draft(title: str, task: str, plan: list[ToolCall], found: Sequence[Change], why: str,
                     worded: str = "") -> Draft:
    """The draft: the model's task (or, `worded`, the plain request and why), the checklist and validators by
    code, the accepted plan."""
    how = f"after the model-first item was dropped ({why[:200]})" if why else "before the model-first path"
    note = (f"made plan-first {how}: plan accepted by the server, checklist and validators written by code from its changes ("
            + "; ".join(c.line() for c in found)[:300] + "), "
            + (f"task worded by code, the plain request ({worded[:200]})" if worded else
               "task written by the model for them"))
    said = [v for _, v in decided_values(plan, found)]
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
