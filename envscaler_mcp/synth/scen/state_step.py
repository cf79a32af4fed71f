"""The state step of ScenGenerator: one initial state per item (prompt envscaler_mcp/synth/prompts/scen/state.md).

The answer is checked against the state schema; a cut-off answer keeps what it completed (`salvage.py`); records
naming records the state lacks are dropped by code when that leaves a consistent state (`dangling.py`); a
check (`feasible.py`, through the pipeline) may refuse a state that leaves no work to do, or mend it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from envscaler_mcp._json import State
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_fit import context_window
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.scen.salvage import merge_state, rest_schema, salvage_state
from envscaler_mcp.synth.scen.state_prompt import records_per_entity, state_step_ladder
from envscaler_mcp.synth.scen.steps import ANSWER_TOKENS, StepContext
from envscaler_mcp.synth.skel.checkstage import accept_initial_state, initial_state_schema
from envscaler_mcp.synth.skel.dangling import dangling_references, repointed, without_dangling
from envscaler_mcp.synth.skel.parsers import parse_initial_state
from envscaler_mcp.synth.skel.quality import dump_state

THEMES = (
    "an ordinary busy week with most records in progress",
    "a quiet period with mostly settled records and a few open ones",
    "a period with several problems to sort out (late, disputed or blocked records)",
    "a new customer base with many recent records",
    "a long history: records spread over many months, some old and closed",
    "a peak season with many records competing for the same resources",
)


@dataclass
class Checked:
    """The state check's verdict on a whole state: why it leaves no work to do ("" when it does) and the
    attributes to write again; or a state mended by code to take its place (`mended`), with what was done."""

    feedback: str = ""
    again: list[str] = field(default_factory=list)
    mended: State | None = None
    mends: list[str] = field(default_factory=list)


StateCheck = Callable[[State], Awaitable[Checked]]


async def gen_state(ctx: StepContext, index: int, total: int, meter: UsageMeter, check: StateCheck | None = None,
                    mends: list[str] | None = None) -> State:
    """Stage 1: one initial state, checked against the state schema; one repair round with the errors.

    An answer that is no JSON because it was cut off (or breaks at its end) keeps what it completed
    (`salvage.py`): the next call asks only for the attributes still missing, shown the kept ones, and the
    merge is checked as a whole answer is. An answer that salvages something costs no retry; one that salvages
    nothing is retried as before. A merge refused because kept records name records the state lacks (the 1.5B
    model's clinic appointments on slots it never wrote) asks for those attributes again, with the refusal, once.
    `check` (`feasible.py`): why a whole state leaves no work to do ("" when it
    does) and the attributes to write again; such a state is asked again with that reason, within the same
    budget (only those attributes, the others kept, when there are some), else the step fails; or a state the
    check mended (`Checked.mended`) is kept in its place.

    Mends by code, before the model is asked again (the 1.5B model rarely acts on the feedback): a state (or a
    merge) whose only fault is records naming records it lacks (tickets on bookings it never wrote) is kept
    without those records when each of their collections keeps one and nothing else then dangles
    (`dangling.without_dangling`). What was mended on the returned state is appended to `mends`."""
    skeleton = ctx.skeleton
    answer = ANSWER_TOKENS["states"]
    records = records_per_entity(skeleton.default_state or {}, answer if context_window(ctx.generator) else None)
    kept: State = {}
    failures = 0
    feedback = ""
    rewrite = False  # kept attributes are those of a refused state, not of a cut-off answer
    dropped: dict[str, str] = {}  # collection -> records dropped from it by code (of the state being built)
    while True:
        pending = [a.name for a in skeleton.state if a.name not in kept]

        def accept(text: str, pending: list[str] = pending) -> State | Salvaged:
            nonlocal failures
            try:
                got = parse_initial_state(text).state
                whole = json.dumps(merge_state(skeleton, kept, got)) if kept else text
            except AnswerFormatError:
                got = salvage_state(skeleton, text, pending, records)
                if not got:
                    failures += 1
                    raise
                if len(got) < len(pending):
                    return Salvaged(got)
                whole = json.dumps(merge_state(skeleton, kept, got))
            try:
                return accept_initial_state(skeleton, whole)  # a whole first answer: as it always was
            except AnswerFormatError as exc:
                if (mended := _without_dangling(skeleton, whole)) is not None:
                    dropped.update(mended[1])
                    return mended[0]
                failures += 1
                stale = dangling_in(kept, json.loads(whole)) if kept else []  # (a merge is JSON text)
                if failures > 1 or not stale:
                    raise
                # kept records that name records the state lacks: no answer for the rest can mend them
                return Salvaged({k: v for k, v in got.items() if k in pending}, stale, str(exc))

        context = {"summary": skeleton.summary, "introduction": skeleton.introduction, "rules": skeleton.rules,
                   "variant": index + 1, "total": total, "theme": THEMES[index % len(THEMES)], "records": records,
                   "kept": dump_state(kept, limit=10**6), "missing": pending, "feedback": feedback,
                   "rewrite": rewrite}
        got = await ask(ctx.generator, "states", context, accept, meter=meter, seat="states",
                        vary_repeats=ctx.steer, retries=max(1 - failures, 0), settings=ctx.settings(),
                        template="scen/state_rest" if kept else "scen/state",
                        schema=rest_schema(skeleton, pending) if kept else initial_state_schema(skeleton),
                        ladder=state_step_ladder(skeleton, pending if kept else None))
        if isinstance(got, Salvaged):
            kept.update(got.parts)
            for name in got.stale:  # asked for again, told why
                kept.pop(name, None)
            feedback = got.why or feedback
            continue
        verdict = await check(got) if check is not None else Checked()
        if not verdict.feedback:
            if mends is not None:
                mends += [*dropped.values(), *verdict.mends]
            return got if verdict.mended is None else verdict.mended
        feedback, again = verdict.feedback, verdict.again
        failures += 1
        if failures > 1:
            raise StepFailed("states", feedback, failures)
        kept.clear()
        kept.update({name: value for name, value in got.items() if again and name not in again})
        for name in [name for name in dropped if name not in kept]:  # written again: nothing dropped from it
            del dropped[name]
        rewrite = bool(kept)


@dataclass
class Salvaged:
    """The part of a state answer that was usable although the whole was not (the attributes it completed);
    `stale`: kept attributes to ask for again (their records name records the merged state lacks), and why."""

    parts: State
    stale: list[str] = field(default_factory=list)
    why: str = ""


def _without_dangling(skeleton: EnvSkeleton, whole: str) -> tuple[State, dict[str, str]] | None:
    """The answer without its records naming records it lacks (or, when they cannot be dropped, with them pointed
    at records it has: `dangling.repointed`), if it is then accepted whole; else None."""
    try:
        state = parse_initial_state(whole).state
        found = without_dangling(state) or repointed(state)
        return None if found is None else (accept_initial_state(skeleton, json.dumps(found[0])), found[1])
    except AnswerFormatError:
        return None


def dangling_in(kept: State, merged: State) -> list[str]:
    """The kept attributes whose records name a record the merged state does not have (`dangling.py`)."""
    named = {line.split("[", 1)[0] for line in dangling_references(merged)}
    return [name for name in kept if name in named]


async def load_state(server: LaunchedServer, state: State) -> str | None:
    """Load a state into a fresh episode of the real server; why it does not load, or None."""
    try:
        async with server.episode(state) as episode:
            loaded = await episode.get_state()
    except Exception as exc:  # the server refused the state: a property of the state, not of the run
        return f"the server could not start an episode at this state: {type(exc).__name__}: {exc}"
    normal = json.loads(json.dumps(state))
    differs = [k for k in normal if loaded.get(k) != normal[k]]
    return f"the server did not keep attribute(s) {differs} as given" if differs else None
