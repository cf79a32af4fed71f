"""Read-only items of ScenGenerator: a question about the state, its reference answer, transcript checks.

A question item is made like a task item, from one initial state: question -> solution (the queries that find
the answer) -> replay on the real server -> the reference answer and its checks, written by the model from
the replayed results -> the QA gate with its answer probes. Each '| says:' check becomes a transcript item
`says(transcript, ...)`, each '| called:' check `called(transcript, tool, ...)`, and a last state item asserts
that nothing changed (authoring/readonly.py). A failing item gets one repair round, like a task item.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from envscaler_mcp.authoring.readonly import read_only_scenario
from envscaler_mcp.references.replay import replay_reference
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance
from envscaler_mcp.synth._common_parse import AnswerFormatError, require_sections
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.scen.excerpt import state_ladder
from envscaler_mcp.synth.scen.parsers import TASK_SCHEMA, parse_task
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.steps import ANSWER_TOKENS, StepContext, gen_solution
from envscaler_mcp.transcript.checks import stated
from envscaler_mcp.transcript.facts import fact_spans
from envscaler_mcp.transcript.record import result_value

_OPENERS = ("has ", "have ", "is ", "are ", "did ", "does ")
_RESULT_LIMIT = 4000  # characters of one call's result shown to the model


async def gen_question(ctx: StepContext, state: dict[str, Any], meter: UsageMeter, feedback: str = ""
                       ) -> tuple[str, str]:
    """(title, question) grounded in `state`; answering it changes nothing."""
    sk = ctx.skeleton
    context = {"summary": sk.summary, "introduction": sk.introduction, "tools": ctx.tools(), "feedback": feedback}
    return await ask(ctx.generator, "question", context, parse_task, meter=meter, seat="task",
                     retries=ctx.retries, settings=ctx.settings(answer=ANSWER_TOKENS["task"]), template="scen/question", schema=TASK_SCHEMA,
                     ladder=state_ladder(state))


def _says(spec: str, answer: str) -> str:
    facts = [f.strip().strip("\"'`").strip() for f in spec.split(";")]
    facts = [f for f in facts if f]
    if not facts:
        raise AnswerFormatError("a '| says:' check lists no fact; give the facts separated by ';'")
    missing = [f for f in facts if not stated(answer, f)]
    if missing:
        raise AnswerFormatError(f"the fact(s) {missing} are not stated in your answer as written; copy each fact "
                                "from the answer")
    return "says(transcript, " + ", ".join(repr(f) for f in facts) + ")"


def _called(spec: str, tools: set[str]) -> str:
    try:
        node = ast.parse(spec.strip().strip("`"), mode="eval").body
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args):
            raise ValueError
        args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
    except (SyntaxError, ValueError):
        raise AnswerFormatError(f"cannot read the call {spec.strip()!r}; write it as tool_name(argument=\"value\")"
                                ) from None
    if node.func.id not in tools:
        raise AnswerFormatError(f"'{node.func.id}' is not one of the calls made ({', '.join(sorted(tools))})")
    return "called(transcript, " + ", ".join([repr(node.func.id), *(f"{k}={v!r}" for k, v in args.items())]) + ")"


def parse_answer(text: str, tools: set[str]) -> tuple[str, list[tuple[str, str]]]:
    """'# Answer' and '# Checks' -> (answer, [(check question, validator expression)]). Every fact a check
    names must be stated in the answer, and every number, date and id of the answer must be in a check."""
    sections = require_sections(text, ["Answer", "Checks"])
    answer = " ".join(sections["Answer"].split()).strip('"')
    if not answer:
        raise AnswerFormatError("the answer is empty")
    checks: list[tuple[str, str]] = []
    facts: list[str] = []
    for line in sections["Checks"].splitlines():
        body = line.strip().lstrip("-*• ").strip()
        if "|" not in body:
            continue
        question, spec = (part.strip() for part in body.rsplit("|", 1))
        kind, _, rest = spec.partition(":")
        if not question.lower().startswith(_OPENERS):
            raise AnswerFormatError(f"check {question[:60]!r} is not a yes/no question; start it with 'Has the agent'")
        if kind.strip().lower() == "says":
            checks.append((question, _says(rest, answer)))
            facts += [f.strip().strip("\"'`") for f in rest.split(";") if f.strip()]
        elif kind.strip().lower() == "called":
            checks.append((question, _called(rest, tools)))
        else:
            raise AnswerFormatError(f"check {question[:60]!r} must end with '| says: ...' or '| called: ...'")
    if not any(expr.startswith("says(") for _, expr in checks):
        raise AnswerFormatError("no '| says:' check; list the facts a correct reply must state")
    unchecked = [s.text for s in fact_spans(answer) if not any(stated(s.text, f) for f in facts)]
    if unchecked:
        raise AnswerFormatError(f"{unchecked} in your answer are in no check; add them to a '| says:' check or "
                                "leave them out of the answer")
    return answer, checks


async def gen_answer(ctx: StepContext, task: str, replay: list[Any], meter: UsageMeter, feedback: str = "",
                     previous: str = "") -> tuple[str, list[tuple[str, str]]]:
    """The reference answer and its checks, from the replayed calls (tool, arguments, result_text)."""
    calls = [{"tool": c.tool, "arguments": json.dumps(c.arguments, ensure_ascii=False),
              "result": json.dumps(result_value(c.result_text), ensure_ascii=False, indent=1)[:_RESULT_LIMIT]}
             for c in replay]
    context = {"summary": ctx.skeleton.summary, "task": task, "calls": calls, "feedback": feedback,
               "previous": previous}
    tools = {c.tool for c in replay}
    return await ask(ctx.generator, "answer", context, lambda text: parse_answer(text, tools), meter=meter,
                     seat="answer", retries=ctx.retries, settings=ctx.settings(0.0, ANSWER_TOKENS["answer"]),
                     template="scen/answer")


async def answered(builder: Any, state: dict[str, Any], draft: Draft, meter: UsageMeter, feedback: str = ""
                   ) -> Draft:
    """Replay the draft's solution on the server, then write the reference answer and the checks."""
    ctx = builder.ctx
    probe = Scenario(env_id=ctx.skeleton.id, task=draft.task, initial_state=state, checklist=[],
                     reference_solution=draft.solution, provenance=Provenance(source="synthesized"))
    replay, _, problems = await replay_reference(probe, builder.episode_factory)
    if problems:
        raise StepFailed("solution", "; ".join(problems), 1)
    previous = "" if not feedback else (draft.answer or "")
    answer, checks = await gen_answer(ctx, draft.task, replay, meter, feedback, previous)
    spec = {"title": draft.title, "task": draft.task, "answer": answer, "checks": checks,
            "solution": [(c.tool, c.arguments) for c in draft.solution]}
    scenario = read_only_scenario(ctx.skeleton.id, spec, state)
    return draft.model_copy(update={"answer": answer, "checklist": scenario.checklist})


async def first_question(builder: Any, state: dict[str, Any], meter: UsageMeter) -> Draft:
    """Question, queries and answer for `state`."""
    ctx = builder.ctx
    title, task = await gen_question(ctx, state, meter)
    solution: list[ToolCall] = await gen_solution(ctx, state, task, meter, question=True)
    return await answered(builder, state, Draft(title=title, task=task, solution=solution), meter)


async def repaired_question(builder: Any, state: dict[str, Any], draft: Draft, reasons: list[str], replay_failed: bool,
                            meter: UsageMeter) -> Draft:
    """The one repair round: new queries (then a new answer) when the replay failed, else a new answer."""
    feedback = "\n".join(f"- {r}" for r in reasons[:15])
    if replay_failed:
        solution = await gen_solution(builder.ctx, state, draft.task, meter, feedback, draft.solution, question=True)
        draft = draft.model_copy(update={"solution": solution})
        return await answered(builder, state, draft, meter)
    return await answered(builder, state, draft, meter, feedback)
