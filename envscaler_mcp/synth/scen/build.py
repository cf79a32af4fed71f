"""One scenario from one initial state: task -> checklist -> validators -> solution -> gate, with up to
`REPAIR_ROUNDS` repairs.

The gate is the project's scenario QA gate (`qa.gate.check_scenario`) plus the mutation test: every
validator runs and returns a bool, at least one (and every [change] item) is False on the initial state, the
reference solution replays on a real server episode with every call succeeding, every validator is True
after it, and each field the solution changed is guarded by some validator. A failing scenario gets up to
`REPAIR_ROUNDS` repair rounds, each aimed at the failing part with the concrete failure as feedback, then is
dropped with the reasons.

When the reference solution replayed cleanly but some items' validators disagree with it, the validators of
the items whose text names one record, one of its fields and the value it takes are first written by code from
that text (`item_check.py`, no model call) and the draft gated again. When the solution changed the state and
validators still disagree, the first repair rewrites only those items' validators, shown the changes the solution made (the plan
stands: a small model asked to rewrite both at once tends to make them disagree again); a later round
rewrites validators and solution together.

After each repair, a draft whose reference solution replayed cleanly but some of whose items' validators
disagree with it (raise, already hold on the initial state although the item claims a change, or do not
hold after the plan) gets a last try: [change] items whose validators hold before and after the plan are
re-marked [keep], and the draft is tried without the items that still disagree: kept when they are at most half of
the checklist, at least `last_try.MIN_ITEMS` different validators remain and the whole gate, mutation test included,
passes on them; the dropped items are named in the
scenario's provenance notes. No model call is spent on it; the repair goes first because it can keep the
item (a validator rewritten, an item re-marked [keep]).
"""

from __future__ import annotations

from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.qa.gate import GateReport, check_scenario
from envscaler_mcp.qa.grounding import names_a_record
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance
from envscaler_mcp.synth._common_progress import RunLog, current_item
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen import last_try, questions
from envscaler_mcp.synth.scen.anchors import Anchor, parameter_rules, task_anchors
from envscaler_mcp.synth.scen.existing import existing_record
from envscaler_mcp.synth.scen.marks import marked_by_evidence, without_repeats
from envscaler_mcp.synth.scen.recast import recast
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.retarget import Retargeted, checked_plan, misnamed
from envscaler_mcp.synth.scen.spare import PartlyWritten, spare_draft, unchecked
from envscaler_mcp.synth.scen.steps import StepContext, gen_checklist, gen_solution, gen_task, gen_validators
from envscaler_mcp.synth.scen.verdicts import (
    Verdict,
    already_held,
    changes,
    describe,
    diagnose,
    disagreeing_items,
    retargeted,
    ungrounded,
)

REPAIR_ROUNDS = 2
RECASTS = 3  # records a task is recast from, at most (recast.py)


class SentBack(Exception):
    """The task step's answer is rewritten before the checklist, validators and solution are asked for (they cost
    most of an item's time): it names no record of the initial state (they could only guess the record), or it
    asks to create a record the state already holds (`existing.py`: every check would hold before the plan)."""

    def __init__(self, draft: Draft, verdict: Verdict) -> None:
        super().__init__("; ".join(verdict.reasons))
        self.draft = draft  # the task alone
        self.verdict = verdict  # why, and the records the new task is asked about


class Dropped(Exception):
    """The item is given up at `step` for `reason`."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step
        self.reason = reason


def draft_scenario(env_id: str, state: State, draft: Draft, provenance: Provenance | None = None
                   ) -> Scenario:
    """The draft as a Scenario (id = content hash; difficulty = number of reference calls)."""
    return Scenario(env_id=env_id, title=draft.title, task=draft.task, initial_state=state,
                    checklist=draft.checklist, reference_solution=draft.solution, reference_answer=draft.answer,
                    difficulty=len(draft.solution),
                    provenance=provenance or Provenance(source="synthesized")).with_id()


class ScenarioBuilder:
    """Builds scenarios of one environment against one launched server and one validator sandbox."""

    def __init__(self, ctx: StepContext, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox, *,
                 require_mutation: bool = True, validators_only: bool = True, judge: bool = False) -> None:
        self.ctx = ctx
        self.episode_factory = episode_factory
        self.sandbox = sandbox
        self.require_mutation = require_mutation
        self.validators_only = validators_only  # False: the catalog's gate (the state check catches probes too)
        self.kinds = {t.name: t.kind for t in ctx.skeleton.tools}
        self.judge = judge  # the checker model's judgement (synth/scen/judge.py) after the gate
        self.sparing = require_mutation and validators_only  # items may be dropped in place of the item (spare.py)

    async def judged(self, state: State, draft: Draft, report: GateReport | None, meter: UsageMeter) -> Draft:
        """A draft that passed the gate, judged by the checker model when asked: a "no" drops it, a "yes" is noted."""
        if not self.judge:
            return draft
        from envscaler_mcp.synth.scen.judge import judge_solution

        final = report.final_state if report is not None and report.final_state is not None else None
        try:
            judgement = await judge_solution(self.ctx, draft, "(not shown)" if final is None else
                                             changes(state, dict(final)), meter)
        except StepFailed as exc:
            raise Dropped(exc.step, exc.reason) from exc
        if judgement.verdict == "no":
            raise Dropped("judge", f"the checker model ({judgement.model}) says the solution does not do exactly "
                          f"what the task asks: {judgement.reason}")
        return draft.model_copy(update={"notes": [*draft.notes, judgement.note()]})

    def say(self, text: str) -> None:
        """One line of the run's progress log (synth/_common_progress.py) about the current item, if there is one."""
        log = getattr(self.ctx.generator, "log", None)
        if isinstance(log, RunLog):
            log.line(f"  {current_item.get()} {text}")

    async def evaluate(self, state: State, draft: Draft) -> Verdict:
        """Gate a draft, the verdict said in the progress log."""
        verdict = await self._evaluate(state, draft)
        self.say("gate: " + ("; ".join(verdict.reasons)[:300] if verdict.reasons else "passed"))
        return verdict

    async def _evaluate(self, state: State, draft: Draft) -> Verdict:
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
        if draft.answer is None and not names_a_record(state, draft.task):
            return ungrounded()
        report = await check_scenario(scenario, self.episode_factory, self.sandbox, mutation=self.require_mutation,
                                      free_fields=self.ctx.skeleton.free_fields,
                                      validators_only=self.validators_only)
        if draft.spared is not None and (unchecked_changes := unchecked(report)):  # a dropped item was needed
            step, reason = draft.spared
            raise Dropped(step, f"{reason} (without the dropped item(s), no validator checks what the reference "
                          f"solution changed at {', '.join(unchecked_changes)[:300]})")
        return diagnose(report, scenario, self.require_mutation)

    async def pruned(self, state: State, draft: Draft, verdict: Verdict) -> Draft | None:
        """The draft after the last try that costs no model call (`last_try.pruned`), if the whole gate passes."""
        return await last_try.pruned(self.evaluate, draft_scenario(self.ctx.skeleton.id, state, draft), state,
                                     draft, verdict)

    async def gated(self, state: State, draft: Draft) -> tuple[Draft, Verdict]:
        """The draft and its gate verdict; when validators disagree with a cleanly replayed reference solution,
        those of items that make an exact claim are written by code first (`item_check.py`) and gated again."""
        verdict = await self.evaluate(state, draft)
        if not verdict.reasons:
            return draft, verdict
        coded = last_try.coded(draft_scenario(self.ctx.skeleton.id, state, draft), state, draft, verdict)
        if coded is None:
            return draft, verdict
        self.say("validators: " + coded.notes[-1][:300])
        return coded, await self.evaluate(state, coded)

    async def first_draft(self, state: State, meter: UsageMeter, feedback: str = "", index: int = 0,
                          anchors: list[Anchor] | None = None) -> Draft:
        """Task, checklist, validators and solution for `state` (item number `index`). Steered (`ctx.steer`), the
        task is asked about records chosen from the state (`anchors.task_anchors`, or the given `anchors`) and a
        plan the environment refuses is corrected with the refusal (`plan_fix`)."""
        ctx = self.ctx
        changing = [t for t in ctx.planning_skeleton().tools if t.kind == "state_change"]
        rules = parameter_rules([(t.input_schema, t.description) for t in changing])
        if anchors is None:
            anchors = task_anchors(state, index, [t.input_schema for t in changing], rules=rules) if ctx.steer else []
        title, task = await gen_task(ctx, state, meter, feedback, anchors)
        if not names_a_record(state, task):
            raise SentBack(Draft(title=title, task=task), ungrounded(anchors))
        if (held := existing_record(state, task)) is not None:
            raise SentBack(Draft(title=title, task=task), already_held(held, anchors))
        checklist = await gen_checklist(ctx, task, meter, state)
        draft = Draft(title=title, task=task)
        try:
            draft.checklist = await gen_validators(ctx, state, task, checklist, meter)
        except PartlyWritten as exc:
            draft = spare_draft(draft, exc.written, exc.missing, exc, allowed=self.sparing)
        solution, notes = await self.plan(state, draft, await gen_solution(ctx, state, task, meter), meter)
        return draft.model_copy(update={"solution": solution, "notes": [*draft.notes, *notes]})

    async def retarget(self, state: State, exc: Retargeted) -> tuple[Draft, Verdict, bool]:
        """(draft, verdict, task_only) for a task about a record the rules do not let change: recast by code onto
        a record that takes the change (`recast.py`) and gated, unless the gate then faults the task or its
        consistency; else the task is asked again (`verdicts.retargeted`)."""
        again = exc.draft, retargeted(exc.wrong), True
        changers = {t.name for t in self.ctx.skeleton.tools if t.kind == "state_change"}
        draft, wrong = exc.draft, exc.wrong
        for _ in range(RECASTS):  # a later call of the recast plan may be refused on another record the task names
            moved = recast(draft, wrong, state)
            if moved is None:
                break
            draft = moved
            self.say(f"task: {draft.notes[-1][:300]}")
            if (found := await misnamed(draft.task, draft.solution, state, self.episode_factory, changers,
                                        by_id_only=True)) is None:
                break
            wrong = found
        if draft is exc.draft:
            return again
        draft, verdict = await self.gated(state, draft)
        if verdict.reasons and verdict.part in (None, "task"):
            self.say("task: the recast task is asked again")
            return again
        return draft, verdict, False

    async def plan(self, state: State, draft: Draft, solution: list[ToolCall], meter: UsageMeter
                   ) -> tuple[list[ToolCall], list[str]]:
        """The reference plan, corrected when steered and the environment refuses a call; with the notes.
        Steered, a plan refused on a record the task should not have asked to change raises Retargeted
        (`retarget.checked_plan`)."""
        if not self.ctx.steer:
            return solution, []
        return await checked_plan(self.ctx, self.episode_factory, state, draft, solution, meter)

    def true_before(self, draft: Draft, verdict: Verdict) -> Verdict:
        """Steered: when the reference plan was refused (so the last try cannot re-mark items by what the plan
        does) and some [change] items' validators already hold on the initial state (not every item's), repair
        the checklist: those items are replaced by new ones, the others kept with their validators, and the
        plan is rewritten."""
        report = verdict.report
        refused = report is not None and any(s.name == "replay" and s.status == "fail" for s in report.steps)
        if not self.ctx.steer or report is None or verdict.part is None or not refused:
            return verdict
        results = {r.item_id: r for r in report.initial_results}
        held = [c.id for c in draft.checklist if c.kind == "state" and c.claims_change
                and (r := results.get(c.id)) is not None and r.passed and r.reason is None]
        if not held or len(held) == len(draft.checklist):
            return verdict
        return Verdict(reasons=verdict.reasons, part="checklist", feedback=verdict.feedback, report=report,
                       items=held)

    async def new_items(self, state: State, draft: Draft, verdict: Verdict, meter: UsageMeter) -> dict[str, Any]:
        """A checklist repair (`true_before`): the held items replaced (the model asks only for replacements and
        writes validators only for them), and the refused plan rewritten."""
        held = set(verdict.items or [])
        refused = [f"{c.description[:80]!r}: its check already holds on the initial state, so it is no change the "
                   "task makes" for c in draft.checklist if c.id in held]
        update: dict[str, Any] = {}
        try:
            checklist = await gen_checklist(self.ctx, draft.task, meter, state,
                                            kept=[c for c in draft.checklist if c.id not in held], refused=refused)
            fresh = [c for c in checklist if c.validator is None]
            written = {c.id: c for c in await gen_validators(self.ctx, state, draft.task, fresh, meter)}
            update["checklist"] = [written.get(c.id, c) for c in checklist]
        except StepFailed as exc:  # no usable replacement: the held items are left out, if the rest may do
            why = (f"repair of the {describe(verdict)} failed (gate: {'; '.join(verdict.reasons)}): "
                   f"{exc.reason}")
            spare = spare_draft(draft, draft.checklist, sorted(held), exc, why, allowed=self.sparing)
            update.update(checklist=spare.checklist, spared=spare.spared, notes=spare.notes[len(draft.notes):])
        update["solution"], notes = await self.plan(state, draft, await gen_solution(
            self.ctx, state, draft.task, meter, verdict.feedback, draft.solution), meter)
        update["notes"] = [*update.get("notes", []), *notes]
        return update

    def plan_stands(self, state: State, draft: Draft, verdict: Verdict) -> Verdict:
        """For a first repair: when the solution replayed cleanly and changed the state but some validators
        disagree with it, rewrite only those validators (the feedback shows the solution's changes)."""
        report = verdict.report
        if verdict.part != "validators+solution" or report is None or dict(report.final_state or state) == state:
            return verdict
        items = disagreeing_items(report, draft_scenario(self.ctx.skeleton.id, state, draft))  # [] unless the
        # replay was clean and only validators failed
        if not items:
            return verdict
        return Verdict(reasons=verdict.reasons, part="validators", feedback=verdict.feedback, report=report,
                       items=items)

    async def repair(self, state: State, draft: Draft, verdict: Verdict, meter: UsageMeter, index: int = 0
                     ) -> Draft:
        """Regenerate the failing part with the failure as feedback."""
        ctx, part = self.ctx, verdict.part
        if part == "task":  # the failed task is shown, so a second round asks something new
            feedback = verdict.feedback if not verdict.show_failed else \
                f"{verdict.feedback}\n- the task that failed: {' '.join(draft.task.split())[:600]}"
            repaired = await self.first_draft(state, meter, feedback, index, verdict.anchors)
            repaired.notes = [*draft.notes, "task rewritten after: " + "; ".join(verdict.reasons)[:300],
                              *repaired.notes]
            return repaired
        update: dict[str, Any] = {}
        if part == "checklist":
            update = await self.new_items(state, draft, verdict, meter)
        elif part == "validators" and verdict.items:
            chosen = [c for c in draft.checklist if c.id in verdict.items]
            rewritten = {c.id: c for c in await gen_validators(ctx, state, draft.task, chosen, meter,
                                                                verdict.feedback)}
            update["checklist"] = [rewritten.get(c.id, c) for c in draft.checklist]
        elif part in ("validators", "validators+solution"):
            update["checklist"] = await gen_validators(ctx, state, draft.task, draft.checklist, meter,
                                                       verdict.feedback)
        plan_notes: list[str] = []
        if part in ("solution", "validators+solution"):
            update["solution"], plan_notes = await self.plan(state, draft, await gen_solution(
                ctx, state, draft.task, meter, verdict.feedback, draft.solution), meter)
        update["notes"] = [*draft.notes, f"{describe(verdict)} regenerated after: " + "; ".join(verdict.reasons)[:300],
                           *plan_notes, *update.get("notes", [])]
        return draft.model_copy(update=update)

    async def build(self, state: State, meter: UsageMeter, question: bool = False, index: int = 0) -> Draft:
        """A draft that passed the gate, or Dropped(step, reason). `question`: a read-only item
        (synth/scen/questions.py); `index`: the item's number (which records its task is asked about)."""
        try:
            draft = await (questions.first_question(self, state, meter) if question
                           else self.first_draft(state, meter, index=index))
        except StepFailed as exc:
            raise Dropped(exc.step, exc.reason) from exc
        except SentBack as exc:  # a repair round rewrites the task before anything else is asked
            draft, verdict, task_only = exc.draft, exc.verdict, True
        except Retargeted as exc:  # a task about a record the rules do not let change: recast or asked again
            draft, verdict, task_only = await self.retarget(state, exc)
        else:
            task_only = False
            draft, verdict = await self.gated(state, without_repeats(draft))
        if not verdict.reasons:
            return await self.judged(state, marked_by_evidence(draft, verdict.report), verdict.report, meter)
        rounds = 1 if question else REPAIR_ROUNDS
        for round_ in range(rounds):
            if verdict.part is None:  # the gate's consistency step failed
                raise Dropped("gate", "the task does not ask for what its plan does: " + "; ".join(verdict.reasons))
            if not question:
                steered = self.true_before(draft, verdict)
                verdict = steered if steered.part == "checklist" or round_ > 0 else self.plan_stands(state, draft,
                                                                                                     verdict)
            repaired = describe(verdict)
            try:
                if question:
                    replay_failed = (verdict.part == "solution"
                                     or any(r.startswith("replay:") for r in verdict.reasons))
                    draft = await questions.repaired_question(self, state, draft, verdict.reasons, replay_failed,
                                                              meter)
                else:
                    draft = without_repeats(await self.repair(state, draft, verdict, meter, index))
            except StepFailed as exc:
                raise Dropped(exc.step, f"repair of the {repaired} failed: {exc.reason} "
                              f"({'task check' if task_only else 'gate'}: {'; '.join(verdict.reasons)})") from exc
            except SentBack as exc:
                draft, verdict = exc.draft.model_copy(update={"notes": draft.notes}), exc.verdict
                task_only = True
                continue
            except Retargeted as exc:
                draft, verdict, task_only = await self.retarget(state, exc)
                if not verdict.reasons:
                    return await self.judged(state, marked_by_evidence(draft, verdict.report), verdict.report, meter)
                continue
            task_only = False
            draft, verdict = await self.gated(state, draft)
            if not verdict.reasons:
                return await self.judged(state, marked_by_evidence(draft, verdict.report), verdict.report, meter)
            if (pruned := await self.pruned(state, draft, verdict)) is not None:
                return await self.judged(state, pruned, None, meter)
        if task_only:  # the last task named no record, or one its plan's change is refused on
            raise Dropped("task", "; ".join(verdict.reasons).removeprefix("task: ")
                          + f" (after {rounds} repair round(s))")
        raise Dropped("gate", f"failed after repairing the {repaired}: " + "; ".join(verdict.reasons))

