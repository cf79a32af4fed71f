"""One scenario from one initial state: task -> checklist -> validators -> solution -> gate, with one repair.

The gate is the project's scenario QA gate (`qa.gate.check_scenario`) plus the mutation test: every
validator runs and returns a bool, at least one (and every [change] item) is False on the initial state, the
reference solution replays on a real server episode with every call succeeding, every validator is True
after it, and each field the solution changed is guarded by some validator. A failing scenario gets ONE
repair round aimed at the failing part, then is dropped with the reasons.

Before it is dropped, a repaired draft whose reference solution replayed cleanly but some of whose
items' validators disagree with it (raise, already hold on the initial state although the item claims a
change, or do not hold after the plan) is tried without those items: kept when they are at most half of
the checklist, at least `_MIN_ITEMS` different validators remain and the whole gate, mutation test included,
passes on them; the dropped items are named in the
scenario's provenance notes. No model call is spent on it; the repair goes first because it can keep the
item (a validator rewritten, an item re-marked [keep]).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from envscaler_mcp._json import State
from envscaler_mcp.qa.gate import EpisodeFactory, GateReport, check_scenario
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scoring.diff import diff_states
from envscaler_mcp.scoring.sandbox import ValidatorSandbox
from envscaler_mcp.skeleton.models import Provenance
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen import questions
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.steps import StepContext, gen_checklist, gen_solution, gen_task, gen_validators

Part = Literal["task", "validators", "solution", "validators+solution"]
_MAX_FEEDBACK = 15
_MIN_ITEMS = 2  # a checklist pruned of disagreeing items keeps at least this many


class Dropped(Exception):
    """The item is given up at `step` for `reason`."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason


@dataclass
class Verdict:
    """Outcome of gating one draft: no reasons means it is kept."""

    reasons: list[str]
    part: Part | None = None
    feedback: str = ""
    report: GateReport | None = None


def draft_scenario(env_id: str, state: State, draft: Draft, provenance: Provenance | None = None
                   ) -> Scenario:
    """The draft as a Scenario (id = content hash; difficulty = number of reference calls)."""
    return Scenario(env_id=env_id, title=draft.title, task=draft.task, initial_state=state,
                    checklist=draft.checklist, reference_solution=draft.solution, reference_answer=draft.answer,
                    difficulty=len(draft.solution),
                    provenance=provenance or Provenance(source="synthesized")).with_id()


def _bullets(lines: list[str]) -> str:
    shown = [f"- {line}" for line in lines[:_MAX_FEEDBACK]]
    if len(lines) > _MAX_FEEDBACK:
        shown.append(f"- … and {len(lines) - _MAX_FEEDBACK} more")
    return "\n".join(shown)


def _changes(initial: dict[str, Any], final: dict[str, Any], limit: int = 30) -> str:
    lines = []
    for change in diff_states(initial, final)[:limit]:
        old = json.dumps(change.old, ensure_ascii=False, default=str)[:120]
        new = json.dumps(change.new, ensure_ascii=False, default=str)[:120]
        lines.append(f"{change.path_str()}: {change.op} {old} -> {new}")
    return "\n".join(lines) or "(no change)"


def diagnose(report: GateReport, scenario: Scenario, require_mutation: bool) -> Verdict:
    """Which part to regenerate for a gate report, with the feedback to send; no reasons when it passed."""
    status = {s.name: s.status for s in report.steps}
    reasons = report.reasons()
    if report.passed and (not require_mutation or status.get("mutation") == "pass"):
        return Verdict(reasons=[], report=report)
    failing = {s.name for s in report.steps if s.status == "fail"}
    if require_mutation and status.get("mutation") in ("warn", "fail"):
        failing.add("mutation")
    validators_bad = bool(failing & {"validators", "initial_false", "mutation"})
    solution_bad = "replay" in failing
    part: Part = ("validators+solution" if "final_true" in failing or (validators_bad and solution_bad)
                  else "solution" if solution_bad else "validators")
    feedback = _bullets([r for r in reasons if not r.startswith("mutation: only the first")] or reasons)
    if "final_true" in failing:
        descriptions = {c.id: c.description for c in scenario.checklist}
        not_met = [f"{r.item_id} ({descriptions.get(r.item_id, '')}) is False after the plan"
                   + (f": {r.reason}" if r.reason else "") for r in report.final_results if not r.passed]
        feedback = _bullets(not_met + [r for r in reasons if not r.startswith("final_true:")])
    if report.final_state is not None and failing & {"final_true", "mutation"}:
        if "mutation" in failing:
            feedback += ("\n\nEvery field the task changes must be checked by some validator (its exact value, or "
                         "for generated values its type and format).")
        feedback += ("\n\nState changes the reference solution made (path: op old -> new):\n"
                     + _changes(scenario.initial_state, report.final_state))
    return Verdict(reasons=reasons, part=part, feedback=feedback, report=report)


def disagreeing_items(report: GateReport, scenario: Scenario) -> list[str]:
    """Ids of the items whose validators disagree with a cleanly replayed reference solution (see the module
    docstring); [] when the replay itself failed or something else than the validators failed."""
    failing = {s.name for s in report.steps if s.status == "fail"}
    if not failing or not failing <= {"validators", "initial_false", "final_true"} or report.final_state is None:
        return []
    bad = {r.item_id for r in report.initial_results if r.reason is not None}
    bad |= {c.id for c, r in zip(scenario.checklist, report.initial_results, strict=False)
            if c.kind == "state" and c.claims_change and r.passed}
    bad |= {r.item_id for r in report.final_results if not r.passed}
    return [c.id for c in scenario.checklist if c.id in bad]


class ScenarioBuilder:
    """Builds scenarios of one environment against one launched server and one validator sandbox."""

    def __init__(self, ctx: StepContext, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox, *,
                 require_mutation: bool = True, validators_only: bool = True) -> None:
        self.ctx = ctx
        self.episode_factory = episode_factory
        self.sandbox = sandbox
        self.require_mutation = require_mutation
        self.validators_only = validators_only  # False: the catalog's gate (the state check catches probes too)
        self.kinds = {t.name: t.kind for t in ctx.skeleton.tools}

    async def evaluate(self, state: State, draft: Draft) -> Verdict:
        """Gate a draft (the solution must also call at least one state-changing tool)."""
        scenario = draft_scenario(self.ctx.skeleton.id, state, draft)
        changes = [c.tool for c in draft.solution if self.kinds.get(c.tool) == "state_change"]
        if draft.answer is not None and changes:  # a question: its solution only looks things up
            reason = f"the question's reference solution calls state-changing tools ({', '.join(changes)})"
            return Verdict(reasons=[f"replay: {reason}"], part="solution", feedback=f"- {reason}")
        if draft.answer is None and not changes:
            reason = "the reference solution calls no state-changing tool, so the task does not change the state"
            return Verdict(reasons=[f"task: {reason}"], part="task", feedback=f"- {reason}; the task must ask for "
                           "changes (create, update, cancel …), not only information")
        report = await check_scenario(scenario, self.episode_factory, self.sandbox, mutation=self.require_mutation,
                                      free_fields=self.ctx.skeleton.free_fields,
                                      validators_only=self.validators_only)
        return diagnose(report, scenario, self.require_mutation)

    async def pruned(self, state: State, draft: Draft, verdict: Verdict) -> Draft | None:
        """The draft without the items whose validators disagree with its reference solution, if they are at
        most half of it, `_MIN_ITEMS` different validators are left and the whole gate passes; else None."""
        if verdict.report is None:
            return None
        bad = disagreeing_items(verdict.report, draft_scenario(self.ctx.skeleton.id, state, draft))
        kept = [c for c in draft.checklist if c.id not in bad]
        distinct = {" ".join((c.validator or "").split()) for c in kept}
        if not bad or len(bad) > len(draft.checklist) // 2 or len(distinct) < _MIN_ITEMS:
            return None
        candidate = draft.model_copy(update={"checklist": kept, "notes": [
            *draft.notes, f"checklist items {', '.join(bad)} dropped: their validators disagreed with the "
            "reference solution (" + "; ".join(verdict.reasons)[:300] + ")"]})
        return candidate if not (await self.evaluate(state, candidate)).reasons else None

    async def first_draft(self, state: State, meter: UsageMeter, feedback: str = "") -> Draft:
        """Task, checklist, validators and solution for `state`."""
        ctx = self.ctx
        title, task = await gen_task(ctx, state, meter, feedback)
        checklist = await gen_checklist(ctx, task, meter)
        checklist = await gen_validators(ctx, state, task, checklist, meter)
        solution = await gen_solution(ctx, state, task, meter)
        return Draft(title=title, task=task, checklist=checklist, solution=solution)

    async def repair(self, state: State, draft: Draft, verdict: Verdict, meter: UsageMeter) -> Draft:
        """Regenerate the failing part with the failure as feedback."""
        ctx, part = self.ctx, verdict.part
        if part == "task":
            repaired = await self.first_draft(state, meter, verdict.feedback)
            repaired.notes = [*draft.notes, "task rewritten after: " + "; ".join(verdict.reasons)[:300]]
            return repaired
        update: dict[str, Any] = {}
        if part in ("validators", "validators+solution"):
            update["checklist"] = await gen_validators(ctx, state, draft.task, draft.checklist, meter,
                                                       verdict.feedback)
        if part in ("solution", "validators+solution"):
            update["solution"] = await gen_solution(ctx, state, draft.task, meter, verdict.feedback,
                                                    draft.solution)
        update["notes"] = [*draft.notes, f"{part} regenerated after: " + "; ".join(verdict.reasons)[:300]]
        return draft.model_copy(update=update)

    async def build(self, state: State, meter: UsageMeter, question: bool = False) -> Draft:
        """A draft that passed the gate, or Dropped(step, reason). `question`: a read-only item
        (synth/scen/questions.py)."""
        try:
            draft = await (questions.first_question(self, state, meter) if question
                           else self.first_draft(state, meter))
        except StepFailed as exc:
            raise Dropped(exc.step, exc.reason) from exc
        verdict = await self.evaluate(state, draft)
        if not verdict.reasons:
            return draft
        try:
            if question:
                replay_failed = verdict.part == "solution" or any(r.startswith("replay:") for r in verdict.reasons)
                draft = await questions.repaired_question(self, state, draft, verdict.reasons, replay_failed, meter)
            else:
                draft = await self.repair(state, draft, verdict, meter)
        except StepFailed as exc:
            raise Dropped(exc.step, f"repair of the {verdict.part} failed: {exc.reason} "
                          f"(gate: {'; '.join(verdict.reasons)})") from exc
        second = await self.evaluate(state, draft)
        if second.reasons and (pruned := await self.pruned(state, draft, second)) is not None:
            return pruned
        if second.reasons:
            raise Dropped("gate", f"failed after repairing the {verdict.part}: " + "; ".join(second.reasons))
        return draft
