"""The dual-agent quality check: a tester model picks calls, each runs through MCP, a checker model judges it.

The environment runs as a real MCP server episode; the state before and after every call is read through
the admin plane. Calls go to one episode that is never reset, so state accumulates as in EnvScaler.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from envscaler_mcp._json import State
from envscaler_mcp._outcome import call_succeeded, read_result
from envscaler_mcp.launch.episodes import Episode
from envscaler_mcp.providers.base import GenerationSettings, Provider
from envscaler_mcp.skeleton.models import EnvSkeleton, QualityCheck, QualityReport, ToolProof, ToolSpec
from envscaler_mcp.synth._common_diff import state_diff
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.skel.assemble import method_with_helpers
from envscaler_mcp.synth.skel.parsers import (
    CHECKER_SCHEMA,
    TESTER_CASES,
    CheckerAnswer,
    TesterAnswer,
    parse_checker,
    parse_tester,
    tester_schema,
)

EpisodeFactory = Callable[[EnvSkeleton, dict[str, Any]], AbstractAsyncContextManager[Episode]]


@asynccontextmanager
async def mcp_episode(skeleton: EnvSkeleton, state: State) -> AsyncIterator[Episode]:
    """Render the skeleton, start it as an HTTP MCP server and open one episode at `state`."""
    from envscaler_mcp.launch import launch_server

    async with launch_server(skeleton, transport="http") as server, server.episode(state) as episode:
        yield episode


@dataclass
class QualityOptions:
    """Settings of the dual-agent check."""

    calls: int | None = None  # None: two per tool
    per_tool_cap: int = 10
    threshold: float = 0.85
    retries: int = 2


def _signature(spec: ToolSpec) -> str:
    props = spec.parameters()
    required = spec.required_parameters()
    parts = []
    for name, schema in props.items():
        typ = schema.get("type", "any")
        label = typ if isinstance(typ, str) else "|".join(str(t) for t in typ) if isinstance(typ, list) else "any"
        parts.append(f"{name}: {label}" + ("" if name in required else "?"))
    return ", ".join(parts)


def _dump(value: Any, limit: int = 12000) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


def _line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def dump_state(state: State, limit: int = 20000) -> str:
    """Valid JSON with one line per record (dict-of-record attributes), far fewer tokens than indenting."""
    lines = ["{"]
    for i, (name, value) in enumerate(state.items()):
        comma = "," if i < len(state) - 1 else ""
        if isinstance(value, dict) and value:
            lines.append(f" {_line(name)}: {{")
            lines += [f"  {_line(k)}: {_line(v)}" + ("," if j < len(value) - 1 else "")
                      for j, (k, v) in enumerate(value.items())]
            lines.append(" }" + comma)
        else:
            lines.append(f" {_line(name)}: {_line(value)}{comma}")
    lines.append("}")
    text = "\n".join(lines)
    return text if len(text) <= limit else text[:limit] + "\n... (truncated)"


Outcome = Literal["succeeded", "refused", "crashed", "invalid"]
_SCHEMA_REFUSAL = "Invalid arguments for tool"  # the server's own argument check: the method never ran


def call_outcome(payload: Any, is_error: bool) -> Outcome:
    """What a call observably did: the method answered success, answered a refusal ({"success": false}),
    failed (an exception or a timeout: an error result), or never ran (arguments the tool's schema refuses)."""
    if is_error:
        return "invalid" if isinstance(payload, str) and payload.startswith(_SCHEMA_REFUSAL) else "crashed"
    return "succeeded" if call_succeeded(payload, False, "envscaler") else "refused"  # synthesized: EnvScaler's


def call_facts(case: str, outcome: Outcome, payload: Any, changed: bool) -> str:
    """The observable facts of one call, in words, for the checker."""
    did = {"succeeded": "succeeded (success: true)",
           "refused": f"was refused ({_line(payload)[:300]})",
           "crashed": f"failed with an error instead of answering ({str(payload)[:300]})"}[outcome]
    wanted = "success" if case == "positive" else "a refusal"
    return (f"The tester meant this as a {case} test (it expected {wanted}; it may be wrong). The method {did}. "
            f"The state {'changed (the diff above)' if changed else 'did not change'}.")


def verdict_of(answer: CheckerAnswer, outcome: Outcome) -> tuple[str, str]:
    """(verdict, reason) from the checker's expectation and what the call did. A crash fails whatever was
    expected; an expected refusal that came is a pass and one that did not come a fail, as is an expected
    success that was refused; only a call that should succeed and did is judged on its content by the checker's
    verdict. An answer without an expectation keeps its own verdict."""
    if outcome == "crashed":
        return "fail", answer.reason if answer.verdict == "fail" and answer.reason else \
            "the method failed with an error instead of returning a result"
    if answer.expected is None:
        return answer.verdict, answer.reason
    if answer.expected == "refusal":
        if outcome == "refused":  # the checker's own words may contradict its expectation: state the facts
            return "pass", "the checker expected these arguments to be refused, and they were"
        return "fail", f"these arguments should have been refused, but the call succeeded. {answer.reason}".strip()
    if outcome == "refused":
        return "fail", f"these arguments should have succeeded, but the call was refused. {answer.reason}".strip()
    return answer.verdict, answer.reason


def summarize(checks: list[QualityCheck], threshold: float, repaired: list[str] | None = None,
              tools: list[ToolProof] | None = None) -> QualityReport:
    """Count verdicts into a QualityReport with score (pass + warning) / total; `tools`: each tool's status."""
    passed = sum(c.verdict == "pass" for c in checks)
    warnings = sum(c.verdict == "warning" for c in checks)
    failed = sum(c.verdict == "fail" for c in checks)
    total = passed + warnings + failed
    return QualityReport(method="dual-agent", passed=passed, warnings=warnings, failed=failed,
                         score=round((passed + warnings) / total, 4) if total else None, threshold=threshold,
                         repaired_tools=list(repaired or []), checks=checks, tools=list(tools or []))


async def dual_agent_check(
    skeleton: EnvSkeleton, state: State, tester: Provider, checker: Provider, options: QualityOptions,
    meter: UsageMeter, episode_factory: EpisodeFactory = mcp_episode,
) -> list[QualityCheck]:
    """Run the tester/checker rounds against a live episode; returns the judged calls."""
    specs = {t.name: t for t in skeleton.tools}
    rounds = options.calls if options.calls is not None else 2 * len(specs)
    rounds = min(rounds, options.per_tool_cap * len(specs))
    counts = {name: {"total": 0, "positive": 0, "negative": 0} for name in specs}
    checks: list[QualityCheck] = []
    async with episode_factory(skeleton, state) as episode:
        listed = [t.name for t in await episode.list_tools()]
        offered = [n for n in specs if n in listed]
        for round_no in range(1, rounds + 1):
            before = await episode.get_state()
            # Every tool gets a positive test (valid arguments, meant to succeed): a tool only ever refusing
            # bad arguments shows nothing of what it does. Once the rounds left only just suffice, the tester
            # must pick a tool without one, as a positive case.
            unproven = [n for n in offered if counts[n]["positive"] == 0]
            must_cover = unproven if len(unproven) >= rounds - round_no + 1 else []
            blocked = [n for n in offered if counts[n]["total"] >= options.per_tool_cap]

            def accept(text: str, must_cover: list[str] = must_cover, blocked: list[str] = blocked) -> TesterAnswer:
                answer = parse_tester(text)
                if answer.tool not in offered:
                    raise AnswerFormatError(f"unknown tool {answer.tool!r}; pick one of: {', '.join(offered)}")
                if answer.tool in blocked:
                    raise AnswerFormatError(f"{answer.tool} has reached its cap of {options.per_tool_cap} tests")
                if must_cover and (answer.tool not in must_cover or answer.case != "positive"):
                    raise AnswerFormatError("pick a tool without a positive test yet, with valid arguments, as a "
                                            "positive case: " + ", ".join(must_cover))
                return answer

            tools_view = [{"name": n, "signature": _signature(specs[n]),
                           "summary": specs[n].description.strip().splitlines()[0] if specs[n].description else "",
                           **counts[n]} for n in offered]
            try:
                pick: TesterAnswer = await ask(
                    tester, "skel/tester",
                    {"summary": skeleton.summary, "introduction": skeleton.introduction, "tools": tools_view,
                     "must_cover": must_cover, "blocked": blocked, "state": dump_state(before), "round": round_no,
                     "rounds": rounds, "per_tool_cap": options.per_tool_cap},
                    accept, meter=meter, seat="tester", retries=options.retries,
                    settings=GenerationSettings(temperature=0.5, max_tokens=1024, timeout_s=300.0),
                    schema=tester_schema(must_cover or [n for n in offered if n not in blocked] or offered,
                                         ("positive",) if must_cover else TESTER_CASES))
            except StepFailed:
                break  # the tester cannot go on; judge what was collected
            result = read_result(await episode.call_tool(pick.tool, pick.arguments))
            payload, is_error = result.value, result.is_error
            after = await episode.get_state()
            counts[pick.tool]["total"] += 1
            counts[pick.tool][pick.case] += 1
            outcome = call_outcome(payload, is_error)
            if outcome == "invalid":
                continue  # the server refused the arguments before the method ran: nothing of it to judge
            diff = state_diff(before, after)
            try:
                answer: CheckerAnswer = await ask(
                    checker, "skel/checker",
                    {"summary": skeleton.summary, "rules": skeleton.rules, "tool": pick.tool, "case": pick.case,
                     "method_source": method_with_helpers(skeleton.class_source, skeleton.class_name, pick.tool),
                     "arguments": _dump(pick.arguments), "result": _dump(payload), "is_error": is_error,
                     "state_before": dump_state(before), "diff": "\n".join(diff) or "(no change)",
                     "facts": call_facts(pick.case, outcome, payload, bool(diff))},
                    parse_checker, meter=meter, seat="checker", retries=options.retries, schema=CHECKER_SCHEMA)
            except StepFailed:
                continue  # no usable verdict: the call is not counted either way
            verdict, reason = verdict_of(answer, outcome)
            checks.append(QualityCheck(tool=pick.tool, arguments=pick.arguments,
                                       case="negative" if pick.case == "negative" else "positive",
                                       result=payload, verdict=verdict, reason=reason,
                                       expected=answer.expected, outcome=outcome))
    return checks
