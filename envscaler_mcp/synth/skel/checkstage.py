"""Stage 3 (check): initial state -> dual-agent check -> one repair round of failing methods -> keep or drop.

Outputs: OUT/check/envs/<env_id>.json (a CheckRecord, kept or not), OUT/check/dropped.jsonl (envs given up
before a verdict, e.g. no valid initial state), and OUT/environments/<env_id>/skeleton.json for survivors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import MCPError

from envscaler_mcp._io import atomic_write_text
from envscaler_mcp._json import State
from envscaler_mcp.errors import EnvironmentCodeError, RenderError, ServerStartError
from envscaler_mcp.providers.base import GenerationSettings, Provider
from envscaler_mcp.skeleton.build import EnvMeta, build_skeleton, skeleton_json, validate_state
from envscaler_mcp.skeleton.models import EnvSkeleton, QualityCheck, QualityReport, ToolProof
from envscaler_mcp.skeleton.schema import state_schema
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth._common_progress import item_scope
from envscaler_mcp.synth._common_store import ItemCallback, ItemDir, JsonlLedger, run_bounded
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.skel.assemble import without_methods
from envscaler_mcp.synth.skel.codecheck import accept_method
from envscaler_mcp.synth.skel.coverage import dropped, failing_checks, judge_tools, working
from envscaler_mcp.synth.skel.dangling import dangling_references
from envscaler_mcp.synth.skel.parsers import parse_initial_state, parse_method
from envscaler_mcp.synth.skel.quality import (
    EpisodeFactory,
    QualityOptions,
    dual_agent_check,
    mcp_episode,
    summarize,
)
from envscaler_mcp.synth.skel.records import CheckRecord, DroppedRecord, ModelRecord


@dataclass
class CheckOptions:
    """Settings of the check stage."""

    quality: QualityOptions = field(default_factory=QualityOptions)
    repair: bool = True
    min_tools: int = 5  # tools proven to work an environment must keep
    coverage: bool = True  # prove each tool works (coverage.py); off only to replay runs recorded before it
    retries: int = 2
    concurrency: int = 2
    models: dict[str, str] = field(default_factory=dict)
    on_item: ItemCallback | None = None


def _rebuild(skeleton: EnvSkeleton, source: str, state: State, *, strict: bool) -> EnvSkeleton:
    meta = EnvMeta(id=skeleton.id, name=skeleton.name, summary=skeleton.summary,
                   introduction=skeleton.introduction, class_name=skeleton.class_name,
                   entities=skeleton.entities, rules=skeleton.rules)
    return build_skeleton(meta, source, state, skeleton.provenance, strict=strict)


def accept_initial_state(skeleton: EnvSkeleton, text: str) -> State:
    """Parse a model's initial-state answer; raise AnswerFormatError (sent back to the model) when it does not
    fit the skeleton's state schema, leaves a state attribute out, or has a record naming a record it does not have
    (dangling.py)."""
    state = parse_initial_state(text).state
    problems = validate_state(skeleton, state)
    missing = [a.name for a in skeleton.state if a.name not in state]
    if missing:
        problems.append(f"state: missing attribute(s) {missing}; give every state attribute a value")
    if not problems and (dangling := dangling_references(state)):  # every call about such a record would fail
        raise AnswerFormatError("the initial state names records it does not have:\n  - " + "\n  - ".join(
            f"{line}: add that record or name one the state has" for line in dangling))
    if problems:
        raise AnswerFormatError("the initial state does not fit the state schema:\n  - "
                                + "\n  - ".join(problems[:12]))
    return state


def initial_state_schema(skeleton: EnvSkeleton) -> dict[str, Any]:
    """Structured-output schema of an initial state: the state schema with every attribute required."""
    schema = state_schema(skeleton)
    return {**schema, "required": [a.name for a in skeleton.state]}


async def initial_state(skeleton: EnvSkeleton, provider: Provider, retries: int, meter: UsageMeter) -> State:
    """Ask for a rich initial state and validate it against the state schema (errors go back to the model)."""
    def accept(text: str) -> dict[str, Any]:
        return accept_initial_state(skeleton, text)

    return await ask(provider, "skel/init_state",
                     {"summary": skeleton.summary, "class_source": skeleton.class_source,
                      "state_schema": json.dumps(state_schema(skeleton)["properties"], indent=1)},
                     accept, meter=meter, retries=retries,
                     settings=GenerationSettings(temperature=0.5, max_tokens=3000, timeout_s=600.0),
                     schema=initial_state_schema(skeleton))


async def repair_methods(skeleton: EnvSkeleton, checks: list[QualityCheck], provider: Provider, retries: int,
                         meter: UsageMeter, planned: dict[str, str] | None = None) -> tuple[str, list[str], list[str]]:
    """One repair round: rewrite every method with a Fail verdict. Returns (source, repaired, notes).

    `planned` maps tool -> planned kind; a planned query must stay read-only (the current code's kind is
    no guide: a broken state change may write nothing)."""
    failures: dict[str, list[QualityCheck]] = {}
    for check in checks:
        if check.verdict == "fail":
            failures.setdefault(check.tool, []).append(check)
    source, repaired, notes = skeleton.class_source, [], []
    kinds = dict(planned or {})
    for tool, fails in failures.items():
        base = source

        def accept(text: str, tool: str = tool, base: str = base) -> str:
            _, assembled, _spec = accept_method(parse_method(text).code, tool, base, skeleton.class_name,
                                                kind="query" if kinds.get(tool) == "query" else None)
            return assembled

        shown = [{"arguments": json.dumps(f.arguments, ensure_ascii=False),
                  "result": json.dumps(f.result, ensure_ascii=False, default=str)[:600], "reason": f.reason}
                 for f in fails[:5]]
        try:
            source = await ask(provider, "skel/repair",
                               {"summary": skeleton.summary, "rules": skeleton.rules, "class_source": source,
                                "tool": tool, "failures": shown},
                               accept, meter=meter, retries=retries)
            repaired.append(tool)
        except StepFailed as exc:
            notes.append(f"repair of {tool} gave up: {exc.reason}")
    return source, repaired, notes


async def check_environment(
    record: ModelRecord, generator: Provider, tester: Provider, checker: Provider, options: CheckOptions,
    meter: UsageMeter, episode_factory: EpisodeFactory = mcp_episode,
) -> tuple[CheckRecord, EnvSkeleton | None]:
    """Check one environment; returns its record and, when kept, the final skeleton (with quality)."""
    skeleton = record.skeleton
    threshold = options.quality.threshold
    state = await initial_state(skeleton, generator, options.retries, meter)
    skeleton = skeleton.model_copy(update={"default_state": state})
    checks = await dual_agent_check(skeleton, state, tester, checker, options.quality, meter, episode_factory)
    prove = judge_tools if options.coverage else _no_proofs
    first = summarize(checks, threshold, tools=await prove(skeleton, state, checks, episode_factory))
    final: QualityReport = first
    notes: list[str] = []
    failing = [c for c in checks if c.verdict == "fail"] + failing_checks(first.tools)
    if options.repair and failing:
        source, repaired, notes = await repair_methods(
            skeleton, failing, generator, options.retries, meter, {op.name: op.kind for op in record.operations})
        if repaired:
            try:
                candidate = _rebuild(skeleton, source, state, strict=False)
            except EnvironmentCodeError as exc:
                notes.append(f"repaired source was refused: {exc}")
            else:
                stale = tuple(f"{tool}:" for tool in repaired)  # kind notes about the replaced code
                provenance = candidate.provenance.model_copy(update={
                    "notes": [n for n in candidate.provenance.notes if not n.startswith(stale)]})
                candidate = candidate.model_copy(update={"provenance": provenance})
                checks = await dual_agent_check(candidate, state, tester, checker, options.quality, meter,
                                                episode_factory)
                second = summarize(checks, threshold, repaired,
                                   await prove(candidate, state, checks, episode_factory))
                if working(second.tools) >= working(first.tools) and (second.score or 0.0) >= (first.score or 0.0):
                    skeleton, final = candidate, second
                else:  # the repair made things worse: keep the original code and its report
                    notes.append(f"repair of {', '.join(repaired)} scored {second.score} < {first.score} with "
                                 f"{working(second.tools)} tool(s) working, not {working(first.tools)}; reverted")
    skeleton, final, reason = _drop_unproven(skeleton, final, state, threshold, options.min_tools)
    kept = not reason
    result: EnvSkeleton | None = None
    if kept:
        try:
            result = _rebuild(skeleton, skeleton.class_source, state, strict=True)
        except EnvironmentCodeError as exc:
            kept, reason = False, f"final build failed: {exc}"
    if result is not None:
        provenance = result.provenance.model_copy(update={
            "models": {**result.provenance.models, **options.models},
            "usage": record.usage + meter.total,
            "notes": result.provenance.notes + notes,
        })
        result = result.model_copy(update={"quality": final, "provenance": provenance})
    check_record = CheckRecord(env_id=record.env_id, kept=kept, reason=reason, first_report=first,
                               final_report=final, initial_state=state, notes=notes, usage=meter.total,
                               usage_by_seat=meter.by_seat)
    return check_record, result


async def _no_proofs(*_: Any) -> list[ToolProof]:
    return []


def _drop_unproven(skeleton: EnvSkeleton, report: QualityReport, state: State, threshold: float,
                   min_tools: int) -> tuple[EnvSkeleton, QualityReport, str]:
    """Drop the tools not seen working (their methods removed, their calls no longer scored); returns the
    skeleton, its report, and why the environment is not kept ("" when it is)."""
    works = working(report.tools)
    if report.tools and works < min_tools:
        return skeleton, report, f"{works} of {len(report.tools)} tools proven to work (< {min_tools})"
    gone = {p.tool for p in report.tools if p.status != "works"}
    if gone:
        try:
            skeleton = _rebuild(skeleton, without_methods(skeleton.class_source, skeleton.class_name, gone), state,
                                strict=False)
        except EnvironmentCodeError as exc:
            return skeleton, report, f"dropping {', '.join(sorted(gone))} broke the class: {exc}"
        report = summarize([c for c in report.checks if c.tool not in gone], threshold, report.repaired_tools,
                           dropped(report.tools))
    if report.score is None:
        return skeleton, report, "no call could be judged"
    return skeleton, report, "" if report.score >= threshold else f"quality score {report.score} < {threshold}"


def check_todo(records: list[ModelRecord], out: Path) -> list[ModelRecord]:
    """The modelled environments not finished (checked or dropped) in an earlier run."""
    done = ItemDir(out / "check" / "envs")
    dropped = JsonlLedger(out / "check" / "dropped.jsonl", "env_id")
    return [r for r in records if not done.done(r.env_id) and r.env_id not in dropped]


async def run_check(records: list[ModelRecord], out: Path, generator: Provider, tester: Provider, checker: Provider,
                    options: CheckOptions, episode_factory: EpisodeFactory = mcp_episode) -> None:
    """Run the check stage for every modelled environment not finished in an earlier run."""
    done = ItemDir(out / "check" / "envs")
    dropped = JsonlLedger(out / "check" / "dropped.jsonl", "env_id")

    def drop(env_id: str, step: str, reason: str, meter: UsageMeter, kind: str = "answer") -> None:
        dropped.add(DroppedRecord(env_id=env_id, stage="check", step=step, reason=reason, kind=kind,
                                  usage=meter.total).model_dump(mode="json"))
        if options.on_item:
            options.on_item("check", env_id, f"dropped at {step}")

    async def work(record: ModelRecord) -> None:
        meter = UsageMeter()
        try:
            with item_scope(record.env_id):
                check_record, skeleton = await check_environment(record, generator, tester, checker, options,
                                                                 meter, episode_factory)
        except StepFailed as exc:
            drop(record.env_id, exc.step, exc.reason, meter, exc.kind)
            return
        except (RenderError, ServerStartError, MCPError) as exc:  # the server could not run this environment
            drop(record.env_id, "launch", str(exc), meter, "launch")
            return
        if skeleton is not None:
            atomic_write_text(out / "environments" / record.env_id / "skeleton.json", skeleton_json(skeleton))
        done.write(record.env_id, check_record.model_dump(mode="json"))
        if options.on_item:
            score = check_record.final_report.score if check_record.final_report else None
            options.on_item("check", record.env_id, f"{'kept' if check_record.kept else 'not kept'} (score {score})")

    await run_bounded(check_todo(records, out), work, concurrency=options.concurrency)
