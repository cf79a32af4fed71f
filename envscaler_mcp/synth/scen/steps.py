"""The model-facing steps of ScenGenerator: one prompt template each (envscaler_mcp/synth/prompts/scen/*.md).

Each step renders its template, calls the model through `synth.llm.ask` (parse failures go back to the
model), and returns a parsed, statically checked value. A step can be asked again with `feedback` (the
repair round); the template then shows what failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.providers.base import GenerationSettings, Provider
from envscaler_mcp.scenario.models import ChecklistItem, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton, QualityCheck
from envscaler_mcp.synth._common_fit import context_window
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask, templates_digest
from envscaler_mcp.synth.scen.anchors import Anchor, example_items
from envscaler_mcp.synth.scen.checklist_fix import Collector
from envscaler_mcp.synth.scen.excerpt import (
    code_and_state_ladder,
    state_ladder,
    state_view,
    without_descriptions,
)
from envscaler_mcp.synth.scen.fields import fields_problem, named_fields
from envscaler_mcp.synth.scen.parsers import (
    CHECKLIST_SCHEMA,
    TASK_SCHEMA,
    parse_checklist,
    parse_solution,
    parse_task,
    problems_text,
    solution_schema,
    validator_sections,
)
from envscaler_mcp.synth.scen.spare import PartlyWritten
from envscaler_mcp.synth.scen.task_length import change_verbs, short_task_ok

PROMPT_GROUP = "scen"
PROMPT_VERSION = "scen-1"
# Room kept for each step's answer in a small context (the embedded model's 8,192 tokens): a rich state is
# the longest answer; a plan, a checklist or a task are a few hundred tokens.
ANSWER_TOKENS = {"states": 4096, "task": 1024, "checklist": 1024, "validators": 2048, "solution": 1536,
                 "answer": 1024}

def prompt_version() -> str:
    """PROMPT_VERSION plus a digest of the templates, so an edited prompt shows up in provenance."""
    return f"{PROMPT_VERSION}+{templates_digest(PROMPT_GROUP)}"


@dataclass
class StepContext:
    """What every step needs: the environment, the models and the retry budget."""

    skeleton: EnvSkeleton
    generator: Provider
    solver: Provider
    retries: int = 2
    temperature: float = 0.7
    timeout_s: float = 300.0  # per model call: a rich initial state is a long answer
    steer: bool = True  # tasks about chosen records, checklist items kept across retries, plans shown refusals

    def proven(self) -> list[str] | None:
        """The tools the environment's dual-agent check saw succeed (a call with success: true that the checker
        did not fail), when that leaves a state-changing tool; None (every tool) for an environment without
        such a report. Tasks and reference plans use only these: a tool never seen to work is no ground for a
        scenario (an environment synthesized by a small model may have one that cannot succeed). Where the
        check proved each tool (`quality.tools`), the tools it saw work."""
        quality = self.skeleton.quality
        if quality is None or not (quality.tools or any(c.outcome for c in quality.checks)):
            return None
        ok = {p.tool for p in quality.tools if p.status == "works"} if quality.tools else \
            {c.tool for c in self.succeeded()}
        tools = [t.name for t in self.skeleton.tools if t.name in ok]
        if not any(t.kind == "state_change" for t in self.skeleton.tools if t.name in ok):
            return None
        return tools

    def succeeded(self) -> list[QualityCheck]:
        """The dual-agent check's calls that succeeded and that the checker did not fail."""
        quality = self.skeleton.quality
        return [] if quality is None else [c for c in quality.checks
                                           if c.outcome == "succeeded" and c.verdict != "fail"]

    def planning_skeleton(self) -> EnvSkeleton:
        """The skeleton as the task and solution steps see it: only the proven tools, when known."""
        proven = self.proven()
        if proven is None:
            return self.skeleton
        return self.skeleton.model_copy(update={"tools": [t for t in self.skeleton.tools if t.name in proven]})

    def tools(self, schemas: bool = False, compact: bool = False) -> list[dict[str, Any]]:
        """The tools as the templates show them (the proven ones, when known); `compact` leaves the descriptions
        out of the input schemas."""
        out = []
        for t in self.planning_skeleton().tools:
            entry: dict[str, Any] = {"name": t.name, "kind": t.kind,
                                     "summary": (t.description.strip().splitlines() or [""])[0]}
            if schemas:
                schema = without_descriptions(t.input_schema) if compact else t.input_schema
                entry["schema"] = json.dumps(schema, ensure_ascii=False)
            out.append(entry)
        return out

    def changers(self) -> list[str]:
        """The state-changing tools the dual-agent check saw work (none for an environment without that
        report): a small model asked for a task in this environment's topic otherwise asks for changes no
        working tool makes (booking, in an environment whose booking tool never succeeds)."""
        if self.proven() is None:
            return []
        return [t.name for t in self.planning_skeleton().tools if t.kind == "state_change"]

    def observed(self, limit: int = 8) -> list[str]:
        """Calls the environment's dual-agent check saw succeed, as `tool(arguments)` (none for an environment
        without that report): what is known to work, to build tasks and plans on."""
        calls = [f"{c.tool}({json.dumps(c.arguments, ensure_ascii=False)[:200]})" for c in self.succeeded()]
        return list(dict.fromkeys(calls))[:limit]

    def settings(self, temperature: float | None = None, answer: int = ANSWER_TOKENS["states"],
                 provider: Provider | None = None) -> GenerationSettings:
        """Generation settings of a step: `answer` is the room kept for the answer when the step's model says
        its context window (the prompt is shortened to leave it; see `synth.llm.ask`), else 8,192 tokens."""
        window = context_window(provider or self.generator)
        return GenerationSettings(temperature=self.temperature if temperature is None else temperature,
                                  max_tokens=answer if window else 8192, timeout_s=self.timeout_s)


async def gen_task(ctx: StepContext, state: State, meter: UsageMeter, feedback: str = "",
                   anchors: Sequence[Anchor] = ()) -> tuple[str, str]:
    """Stage 2: (title, task) grounded in `state`; with `anchors` (`anchors.task_anchors`), about those records."""
    sk = ctx.skeleton
    context = {"summary": sk.summary, "introduction": sk.introduction, "rules": sk.rules, "tools": ctx.tools(),
               "feedback": feedback, "observed": ctx.observed(), "changers": ctx.changers(),
               "records": [a.line() for a in anchors]}
    verbs = change_verbs(t.name for t in ctx.planning_skeleton().tools if t.kind == "state_change")
    # steered, a short task that is grounded and compositional is kept (task_length.py)
    short = partial(short_task_ok, state, verbs) if ctx.steer else None
    return await ask(ctx.generator, "task", context, lambda text: parse_task(text, short), meter=meter, seat="task",
                     vary_repeats=ctx.steer, retries=ctx.retries,
                     settings=ctx.settings(answer=ANSWER_TOKENS["task"]), template="scen/task", schema=TASK_SCHEMA, ladder=state_ladder(state))


async def gen_checklist(ctx: StepContext, task: str, meter: UsageMeter, state: State | None = None,
                        kept: list[ChecklistItem] | None = None, refused: Sequence[str] = ()
                        ) -> list[ChecklistItem]:
    """Stage 3: independent 'Has …' items, each marked [change] or [keep].

    Steered (`ctx.steer`): the prompt shows what a good item looks like, and the usable items of a refused
    answer are kept (`checklist_fix.Collector`): the retry names the refused items and why (about a tool, visibly
    true on the initial `state`, naming an id neither the state nor the task has) and asks only for
    replacements. A repeated request is sampled afresh
    (`ask(vary_repeats=True)`), in every steered step. A repair passes the items it `kept` and why the others
    were `refused`: the first request already asks only for replacements (the kept items come back first)."""
    change_tools = ", ".join(t.name for t in ctx.planning_skeleton().tools if t.kind == "state_change")
    collector = Collector(state or {}, kept, task)
    context = {"summary": ctx.skeleton.summary, "task": task, "change_tools": change_tools, "steer": ctx.steer,
               "examples": example_items(state or {}) if ctx.steer else [],
               "feedback": collector.request(list(refused)) if kept is not None else ""}
    accept: Callable[[str], list[ChecklistItem]] = collector if ctx.steer else parse_checklist
    return await ask(ctx.generator, "checklist", context, accept, meter=meter, seat="checklist",
                     vary_repeats=ctx.steer, retries=ctx.retries,
                     settings=ctx.settings(0.0, ANSWER_TOKENS["checklist"]),
                     template="scen/checklist",
                     schema=CHECKLIST_SCHEMA)


async def gen_validators(ctx: StepContext, state: State, task: str, checklist: list[ChecklistItem],
                         meter: UsageMeter, feedback: str = "") -> list[ChecklistItem]:
    """Stage 4: one statically checked `check_func` per item; returns the items with validators set.

    Every usable validator of an answer is kept: when some items' sections are missing (the model stopped
    early) or refused, the next call asks only for those (a shorter prompt and a shorter answer), told which
    are written already and why the others were refused. A call that gives no usable validator is retried as
    any step is (the answer and its error sent back), up to `ctx.retries` times in all; one that gives some
    costs no retry."""
    previous = {c.id: c.validator or "" for c in checklist} if feedback else {}
    state_keys = list(state)
    kept: dict[str, str] = {}
    marks: dict[str, bool] = {}
    refused: list[str] = []
    failures = 0
    while True:
        pending = [c for c in checklist if c.id not in kept]
        ids = [c.id for c in pending]

        def accept(text: str, ids: list[str] = ids) -> tuple[dict[str, str], dict[str, bool], list[str]]:
            nonlocal failures
            sources, found, problems = validator_sections(text, ids, state_keys)
            if ctx.steer:  # a record field no record has and no tool writes: refused with the real fields
                for item_id, source in list(sources.items()):
                    if (why := fields_problem(source, state, ctx.skeleton.class_source)) is not None:
                        del sources[item_id]
                        found.pop(item_id, None)
                        problems.append(f"{item_id}: {why}")
            if not sources:
                failures += 1
                raise AnswerFormatError(problems_text(problems))
            return sources, found, problems

        context = {"summary": ctx.skeleton.summary, "task": task, "checklist": pending, "feedback": feedback,
                   "previous": previous, "written": list(kept), "refused": refused,
                   "fields": named_fields(state, [c.description for c in pending]) if ctx.steer else []}
        try:
            sources, found, problems = await ask(
                ctx.generator, "validators", context, accept, meter=meter, seat="validators",
                vary_repeats=ctx.steer, retries=max(ctx.retries - failures, 0),
                settings=ctx.settings(0.0, ANSWER_TOKENS["validators"]),
                template="scen/validators", ladder=code_and_state_ladder(ctx.skeleton.class_source, state, task))
        except StepFailed as exc:
            if not kept:
                raise
            written = [c for c in checklist if c.id in kept]
            raise PartlyWritten(exc, _with_validators(written, kept, marks if feedback else {}), ids) from exc
        kept.update(sources)
        marks.update(found)
        if not problems:
            break
        refused = [p for p in problems if not p.startswith("#")]
    if not feedback:
        marks = {}  # only a repair may re-mark an item (after the gate showed it already holds initially)
    return _with_validators(checklist, kept, marks)


def _with_validators(checklist: list[ChecklistItem], kept: dict[str, str], marks: dict[str, bool]
                     ) -> list[ChecklistItem]:
    return [c.model_copy(update={"validator": kept[c.id], "claims_change": marks.get(c.id, c.claims_change)})
            for c in checklist]


async def gen_solution(ctx: StepContext, state: State, task: str, meter: UsageMeter, feedback: str = "",
                       previous: list[ToolCall] | None = None, question: bool = False) -> list[ToolCall]:
    """Stage 5: the reference solution, a list of tool calls whose tools and arguments fit the schemas (for a
    question: the queries that find the answer)."""
    sk = ctx.skeleton
    context = {"summary": sk.summary, "rules": sk.rules, "task": task,
               "feedback": feedback, "question": question, "observed": ctx.observed(),
               "previous": json.dumps([c.model_dump() for c in previous or []], ensure_ascii=False, indent=1)}
    planning = ctx.planning_skeleton()
    full, compact = ctx.tools(schemas=True), ctx.tools(schemas=True, compact=True)
    ladder = [{**rung, "tools": full} for rung in code_and_state_ladder(sk.class_source, state, task)]
    ladder += [{"class_source": "", "state": state_view(state, n, task), "tools": compact} for n in (3, 2, 1)]
    return await ask(ctx.solver, "solution", context, lambda text: parse_solution(text, planning), meter=meter,
                     seat="solution", retries=ctx.retries, vary_repeats=ctx.steer,
                     settings=ctx.settings(0.0, ANSWER_TOKENS["solution"], ctx.solver), template="scen/solution",
                     schema=solution_schema(planning), ladder=ladder)
