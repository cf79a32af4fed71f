"""A reference plan whose call the environment refuses goes back to the model with the refusal and the records
the call names, as they are just before it, for a corrected plan (at most `PLAN_ROUNDS` times).

A small model's plan breaks a rule it cannot see in the record it never looked at ("Cannot move ticket INC-3002
from in_progress to in_progress": the ticket already is in progress). Told the refusal alone, it guesses again;
shown the record, it can drop the change already made or pick a value the rules allow. A refused query is left
out without asking (it reads, and refused it changed nothing: the 1.5B model's flight_bookings plans opened with
fare rules for a class the state lacks). The plan is replayed on a real episode here (no validator runs); the
gate replays the final plan again as always.
"""

from __future__ import annotations

import json

from envscaler_mcp._json import State
from envscaler_mcp.references.replay import EpisodeFactory, ReplayCall, replay_calls
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.scen.anchors import asked_for, named_records
from envscaler_mcp.synth.scen.steps import StepContext, gen_solution

PLAN_ROUNDS = 2


async def first_refused(calls: list[ToolCall], state: State, episodes: EpisodeFactory
                        ) -> tuple[int, ReplayCall, State] | None:
    """The first call of `calls` the environment refuses: (its number from 1, the call, the state just before
    it: the plan's earlier calls replayed), or None when every call succeeds (or the episode itself fails: no
    call to blame)."""
    made, _, reasons = await replay_calls(calls, state, episodes)
    if not reasons or not made or made[-1].ok:
        return None
    n, before = len(made), state
    if n > 1:
        _, final, problems = await replay_calls(calls[:n - 1], state, episodes)
        before = final if final is not None and not problems else state
    return n, made[-1], before


def refusal_text(n: int, call: ReplayCall, before: State) -> str:
    """The feedback for refused call `n`: the refusal, the records it names as they are just before it, and the
    records of their collections whose status the refusal asks for."""
    lines = [f"- call {n} {call.tool}({json.dumps(call.arguments, ensure_ascii=False)[:300]}) was refused by "
             f"the system: {call.detail}"]
    shown = named_records(before, call.arguments)
    if shown:
        when = "after the plan's earlier calls" if n > 1 else "in the initial state"
        lines.append(f"The records this call names, as they are just before it ({when}):")
        lines += [f"- {a.line()}" for a in shown]
    for anchor in shown:
        if (found := asked_for(before, anchor, call.detail or "")) is not None:
            status, ids = found
            lines.append(f"The {anchor.collection} whose status is {status}, as the refusal asks: {', '.join(ids)} "
                         f"(use one only where the task is about it).")
    lines.append("Change the plan so that every call is allowed by the rules for these records as they are: "
                 "leave out a change that is already made and a call the task does not ask for, and use only "
                 "records and values the rules allow.")
    return "\n".join(lines)


async def corrected_plan(ctx: StepContext, episodes: EpisodeFactory, state: State, task: str,
                         plan: list[ToolCall], meter: UsageMeter) -> tuple[list[ToolCall], list[str]]:
    """`plan`, or a corrected one when the environment refuses one of its calls: a refused query (it reads,
    and refused it changed nothing) is left out without the model, as long as other calls remain; any other
    refused call gets up to PLAN_ROUNDS new plans, each asked with the last refusal. Returns (the last plan,
    provenance notes naming each change)."""
    queries = {t.name for t in ctx.skeleton.tools if t.kind == "query"}
    notes: list[str] = []
    rounds = 0
    while (found := await first_refused(plan, state, episodes)) is not None:
        n, call, before = found
        feedback = refusal_text(n, call, before)
        if call.tool in queries and len(plan) > 1:
            plan = plan[:n - 1] + plan[n:]
            notes.append("reference plan: a query the system refused left out: "
                         + feedback.splitlines()[0].removeprefix("- ")[:240])
            continue
        if rounds == PLAN_ROUNDS:
            break
        rounds += 1
        plan = await gen_solution(ctx, state, task, meter, feedback, plan)
        notes.append(f"reference plan corrected (round {rounds} of {PLAN_ROUNDS}) after a refused call: "
                     + feedback.splitlines()[0].removeprefix("- ")[:240])
    return plan, notes
