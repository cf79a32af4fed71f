"""The scenario QA gate: a scenario is kept only when its validators are proven to work.

For one scenario, `check_scenario` verifies, in order:

1. validators      - every validator runs in the sandbox and returns a bool (on the initial and the final state;
                     transcript items on the empty and the reference transcript);
2. initial-false   - at least one validator is False on the untouched initial state, every item with
                     `claims_change=True` is False there, and every transcript item is False on the empty
                     transcript (no call, no answer: an agent that does nothing fails);
3. replay          - the reference solution, replayed through a real server episode started at the initial
                     state, has every call succeed (not `is_error`, structured `success` true); it is replayed
                     twice, which also gives the reference final state of the state check (references.reference;
                     once when it agrees byte for byte with the replay an earlier run of the same server kept);
4. final-true      - every validator is True on the state the replay leaves, transcript items on the reference
                     transcript (the replayed calls and the scenario's reference answer);
   consistency     - the task asks for what the reference solution does: the records it names are the ones
                     changed, it points at nothing the agent cannot see, no checklist item is vacuous, no
                     call acts on a record the task neither names nor implies (qa.consistency, qa.unasked);
5. wrong solutions - when wrong solutions are given (the scenario's `wrong_solutions`, plus any the caller
                     passes), each one, replayed in a fresh episode (failed calls rolled back, not fatal),
                     leaves at least one validator not True (qa.wrong; transcript items read its calls and the
                     reference answer);
6. answer probes   - when the scenario has transcript items and a reference answer: each number, date, time
                     and id of the answer changed alone, and each sentence stating one dropped alone, turns
                     some transcript item False (qa.transcript);
7. mutation        - optional: each field of that final state, perturbed alone (what the solution changed, and
                     collateral: another record changed or removed), is caught by a validator or the state
                     check (qa.mutation);
8. wrong probes    - with mutation: plausible wrong solutions built from the reference (plus one harmful extra
                     call, without its last state-changing call) fail the scoring (qa.wrong_probes).

The validators of steps 1, 2, 4 and 5 run after the replays, on all those states in one sandbox request (one
batch process: ValidatorSandbox.run_probes), and the probes of steps 6 and 7 likewise; each state gets the
verdicts it would get alone.

The report says which step failed and why, item by item, so the scenario generator can repair and retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSONObject, ParsedState, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.qa.consistency import consistency_problems
from envscaler_mcp.qa.mutation import MutationReport, Probe, mutation_check
from envscaler_mcp.qa.transcript import EMPTY_TRANSCRIPT, answer_probes, reference_transcript
from envscaler_mcp.qa.wrong import (
    WrongSolution,
    WrongSolutionResult,
    given_wrong_solutions,
    judge_wrong,
    replay_wrong_solutions,
)
from envscaler_mcp.qa.wrong_probes import WrongProbeReport, wrong_probe_check
from envscaler_mcp.references.reference import Reference, ReferenceCache
from envscaler_mcp.references.replay import (
    EpisodeFactory,
    ReplayCall,
)
from envscaler_mcp.sandbox.results import CheckResult
from envscaler_mcp.sandbox.validators import ProbeRun, ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from envscaler_mcp.scenario.titles import shown_title
from envscaler_mcp.skeleton.models import FreeField

__all__ = ["GateReport", "GateStep", "StepName", "StepStatus", "WrongSolution", "check_scenario"]

StepName = Literal["validators", "initial_false", "replay", "final_true", "consistency", "wrong_solutions", "answer_probes",
                   "mutation", "wrong_probes"]
StepStatus = Literal["pass", "fail", "warn", "skip"]


class GateStep(BaseModel):
    """Outcome of one gate step."""

    name: StepName = Field(description="Which step.")
    status: StepStatus = Field(description="pass / fail / warn (reported, not fatal) / skip (not run).")
    reasons: list[str] = Field(default_factory=list, description="Why it failed, warned or was skipped.")
    notes: list[str] = Field(default_factory=list, description="Reported, never fatal (e.g. probes of free fields).")


class GateReport(BaseModel):
    """Everything the gate found out about one scenario."""

    env_id: str = Field(description="Environment id.")
    scenario_id: str = Field(description="Scenario id.")
    title: str = Field("", description="Scenario title.")
    n_checks: int = Field(description="Checklist items.")
    steps: list[GateStep] = Field(description="One entry per gate step, in order.")
    initial_results: list[CheckResult] = Field(default_factory=list, description="Validators on the initial state.")
    final_results: list[CheckResult] = Field(default_factory=list, description="Validators after the replay.")
    replay: list[ReplayCall] = Field(default_factory=list, description="The replayed calls, up to the first failure.")
    wrong_solutions: list[WrongSolutionResult] = Field(
        default_factory=list, description="What each wrong solution did to the checklist, when any were given.")
    mutation: MutationReport | None = Field(None, description="Mutation test, when asked for and reached.")
    wrong_probes: WrongProbeReport | None = Field(
        None, description="Wrong-solution probes built from the reference, run with the mutation test."
    )
    state_check: str = Field("", description="Why the state check is not available for the scenario ('' if it is).")
    final_state: State | None = Field(None, exclude=True, description="State after the replay (not saved).")
    transcript: JSONObject | None = Field(
        None, exclude=True, description="The reference transcript: replayed calls and the reference answer (not saved)."
    )
    answer_probes: list[Probe] = Field(
        default_factory=list, description="Each fact of the reference answer changed, each sentence stating one "
        "dropped, and the transcript items that noticed (when the scenario has transcript items).")

    @property
    def passed(self) -> bool:
        """True when no step failed."""
        return all(s.status != "fail" for s in self.steps)

    def step(self, name: StepName) -> GateStep:
        """The step with this name."""
        return next(s for s in self.steps if s.name == name)

    def reasons(self) -> list[str]:
        """Every failure and warning as 'step: reason'."""
        return [f"{s.name}: {r}" for s in self.steps if s.status in ("fail", "warn") for r in s.reasons]


_LARGE_STATE_BYTES = 1 << 20


def _large(state: State | None) -> bool:
    """Whether a final state read from a server is over 1 MB of JSON text (a state of another kind: not known,
    taken as small)."""
    return isinstance(state, ParsedState) and len(state.encoded) > _LARGE_STATE_BYTES


def _errors(results: list[CheckResult], where: str) -> list[str]:
    return [f"{r.item_id} on the {where} state: {r.reason}" for r in results if r.reason is not None]


def _final_probes(scenario: Scenario, reference: Reference | None, final_state: State,
                  transcript: JSONObject) -> list[ProbeRun]:
    """The validators after the reference solution: an item a turn of a multi-turn scenario names is run on the
    reference's state at that turn's end, every other item on the final state (one probe per state)."""
    at = scenario.item_turn()
    states = reference.turn_states if reference is not None else []
    early = {item: turn for item, turn in at.items() if turn < len(states)}
    if not early:
        return [(scenario.checklist, final_state, transcript)]
    groups: dict[int, list[ChecklistItem]] = {}
    for item in scenario.checklist:
        groups.setdefault(early.get(item.id, -1), []).append(item)
    return [(items, final_state if turn < 0 else states[turn], transcript) for turn, items in groups.items()]


def _in_order(scenario: Scenario, groups: list[list[CheckResult]]) -> list[CheckResult]:
    """The final probes' results (`_final_probes`) one per checklist item, in its order."""
    if len(groups) == 1:
        return groups[0]
    results = {result.item_id: result for group in groups for result in group}
    return [results[item.id] for item in scenario.checklist]


async def check_scenario(scenario: Scenario, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox, *,
                         require_reference: bool = True, mutation: bool = False,
                         wrong_solutions: Sequence[WrongSolution] = (), free_fields: Sequence[FreeField] = (),
                         references: ReferenceCache | None = None, env_key: str = "", env_hash: str | None = None,
                         validators_only: bool = False, convention: str = DEFAULT_CONVENTION) -> GateReport:
    """Run the QA gate on one scenario (see the module docstring); never raises for a bad scenario.

    `wrong_solutions` are checked after the scenario's own ones (step 5, present only when there are any).
    `free_fields` are the environment's (skeleton.free_fields); `references` caches the reference replays
    (shared with a run, keyed by `env_key`; with `env_hash`, the server's content hash, kept in the cache's
    store for later runs).
    `validators_only` asks the mutation test for validators that guard every field the solution changes by
    themselves (the scenario generator's bar for its checklists): no collateral or wrong-solution probes, and
    unguarded fields warn instead of failing.
    """
    report = GateReport(env_id=scenario.env_id, scenario_id=scenario.id, title=shown_title(scenario.title, scenario.task),
                        n_checks=len(scenario.checklist), steps=[])
    add = report.steps.append
    items = scenario.checklist
    validator_problems: list[str] = []
    if not items:
        validator_problems.append("the checklist is empty")
    validator_problems += [f"{c.id} has no validator" for c in items if not (c.validator or "").strip()]

    # 3. replay (twice: it also gives the reference final state of the state check), and the wrong solutions' (5)
    replay_status: StepStatus = "pass"
    replay_reasons: list[str] = []
    reference: Reference | None = None
    if not scenario.has_reference():
        replay_status = "fail" if require_reference else "skip"
        replay_reasons.append("no reference solution, so the task is not proven solvable")
        report.state_check = "the scenario has no reference solution"
    else:
        reference = await (references if references is not None else ReferenceCache()).get(
            scenario, episode_factory, free_fields, env_key=env_key, env_hash=env_hash, convention=convention)
        report.replay, report.final_state, replay_reasons = reference.calls, reference.final_state, list(
            reference.replay_reasons)
        report.state_check = reference.reason
        if replay_reasons:
            replay_status = "fail"
        elif reference.reason or reference.nondeterministic:
            replay_status = "warn"
            replay_reasons += [f"the state check is not available: {reference.reason}"] if reference.reason else []
            replay_reasons += [f"{p} differs between two replays, so it is free for the state check"
                               for p, _ in reference.nondeterministic]
    wrong = await replay_wrong_solutions(scenario, [*given_wrong_solutions(scenario), *wrong_solutions],
                                         episode_factory, convention)

    # The validators on every state so far, in one request: the initial state (1, 2), the reference's (4) and
    # the wrong solutions' (5).
    probes: list[ProbeRun] = [(items, scenario.initial_state, EMPTY_TRANSCRIPT)] if items else []
    finals: list[ProbeRun] = []
    if report.final_state is not None and items:
        report.transcript = reference_transcript(scenario, report.replay, convention)
        finals = _final_probes(scenario, reference, report.final_state, report.transcript)
    judged = [(result, final is not None) for result, final, _ in wrong]
    wrong_runs: list[ProbeRun] = [(items, final, transcript) for _, final, transcript in wrong if final is not None]
    if wrong_runs and _large(report.final_state):
        # Megabyte states: the wrong solutions' states in a request of their own, so that no batch process
        # holds the parses of the reference's and theirs at once (each state gets the same verdicts alone).
        results = await sandbox.run_probes(scenario.initial_state, [*probes, *finals])
        results += await sandbox.run_probes(scenario.initial_state, wrong_runs)
    else:
        results = await sandbox.run_probes(scenario.initial_state, [*probes, *finals, *wrong_runs])
    # The wrong solutions' states are judged: dropped before the consistency step indexes the reference's records
    # (3 MB states: each about 13 MB parsed with its text, held through that step's own peak).
    del wrong, wrong_runs

    # 1. validators (collected along the way) and 2. initial-false
    initial_reasons: list[str] = []
    if items:
        report.initial_results = results[0]
        validator_problems += _errors(report.initial_results, "initial")
        if all(r.passed for r in report.initial_results):
            initial_reasons.append("every validator is already True on the initial state")
        initial_reasons += [f"{c.id} claims a change but is already True on the initial state"
                            for c, r in zip(items, report.initial_results, strict=True)
                            if c.kind == "state" and c.claims_change and r.passed]
        initial_reasons += _empty_transcript_reasons(scenario, report.initial_results)
    else:
        initial_reasons.append("no validators to run")

    # 4. final-true
    final_status: StepStatus = "skip"
    final_reasons: list[str] = []
    if finals:
        report.final_results = _in_order(scenario, results[len(probes):len(probes) + len(finals)])
        validator_problems += _errors(report.final_results, "final")
        final_reasons = [f"{r.item_id} is not True after the reference solution"
                         + (f" ({r.reason})" if r.reason else "") for r in report.final_results if not r.passed]
        final_reasons += _reference_answer_hint(scenario, report.final_results)
        final_status = "fail" if final_reasons else "pass"
    else:
        final_reasons.append("the reference solution was not replayed to the end")

    add(GateStep(name="validators", status="fail" if validator_problems else "pass", reasons=validator_problems))
    add(GateStep(name="initial_false", status="fail" if initial_reasons else "pass", reasons=initial_reasons))
    add(GateStep(name="replay", status=replay_status, reasons=replay_reasons))
    add(GateStep(name="final_true", status=final_status, reasons=final_reasons))
    consistency = consistency_problems(scenario, report.final_state, reference.diff_from_initial()
                                       if reference is not None and report.final_state is not None else None)
    add(GateStep(name="consistency", status="fail" if consistency else "pass", reasons=consistency))

    # 5. wrong solutions (only when there are any)
    if judged:
        checks = iter(results[len(probes) + len(finals):])
        report.wrong_solutions = [judge_wrong(result, next(checks)) if replayed else result
                                  for result, replayed in judged]
        wrong_reasons = [r for r in (w.reason() for w in report.wrong_solutions) if r is not None]
        add(GateStep(name="wrong_solutions", status="fail" if wrong_reasons else "pass", reasons=wrong_reasons))

    # 6. answer probes (only for scenarios with transcript items and a reference answer)
    answer_step = await _probe_answer(scenario, report, sandbox, final_status)
    if answer_step is not None:
        add(answer_step)

    # 7. mutation and 8. wrong probes (optional)
    if mutation:
        await _probe(report, scenario, episode_factory, sandbox, reference, validators_only, convention)
    return report


async def _probe(report: GateReport, scenario: Scenario, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox,
                 reference: Reference | None, validators_only: bool, convention: str) -> None:
    """7. mutation and 8. wrong probes; only meaningful when the final state passes every validator."""
    add = report.steps.append
    if report.step("final_true").status != "pass" or report.final_state is None:
        why = ["needs a final state that passes every validator"]
        add(GateStep(name="mutation", status="skip", reasons=why))
        if not validators_only:
            add(GateStep(name="wrong_probes", status="skip", reasons=why))
        return
    report.mutation = await mutation_check(scenario, report.final_state, sandbox, reference,
                                           validators_only=validators_only, transcript=report.transcript)
    failed: StepStatus = "warn" if validators_only else "fail"
    add(GateStep(name="mutation", status=failed if report.mutation.reasons() else "pass",
                 reasons=report.mutation.reasons(), notes=report.mutation.notes()))
    if validators_only:
        return
    try:
        report.wrong_probes = await wrong_probe_check(scenario, episode_factory, sandbox, reference,
                                                      convention=convention)
    except Exception as exc:  # the server failed under a probe: report it, the other scenarios go on
        add(GateStep(name="wrong_probes", status="fail",
                     reasons=[f"the probes' episodes failed: {type(exc).__name__}: {exc}"]))
        return
    add(GateStep(name="wrong_probes", status="fail" if report.wrong_probes.reasons() else "pass",
                 reasons=report.wrong_probes.reasons(), notes=report.wrong_probes.notes()))


# Transcript items (see qa/transcript.py), kept apart from the state steps above.


def _empty_transcript_reasons(scenario: Scenario, initial_results: list[CheckResult]) -> list[str]:
    """Transcript items True on the empty transcript: an agent that does nothing would pass them."""
    return [f"{c.id} is True on the empty transcript (no call, no answer): an agent that does nothing passes it"
            for c, r in zip(scenario.checklist, initial_results, strict=True) if c.kind == "transcript" and r.passed]


def _reference_answer_hint(scenario: Scenario, final_results: list[CheckResult]) -> list[str]:
    failed = any(not r.passed for c, r in zip(scenario.checklist, final_results, strict=True)
                 if c.kind == "transcript")
    if failed and not (scenario.reference_answer or "").strip():
        return ["the scenario has no reference_answer, so transcript items that read the answer cannot pass"]
    return []


async def _probe_answer(scenario: Scenario, report: GateReport, sandbox: ValidatorSandbox,
                        final_status: StepStatus) -> GateStep | None:
    """The answer-probe step: every changed fact and dropped fact-stating sentence of the reference answer must
    turn some transcript item False. None when the scenario has no transcript item or no reference answer."""
    if not any(c.kind == "transcript" for c in scenario.checklist) or not (scenario.reference_answer or "").strip():
        return None
    if final_status != "pass" or report.transcript is None:
        return GateStep(name="answer_probes", status="skip", reasons=["needs a reference transcript that passes "
                                                                      "every validator"])
    report.answer_probes, truncated = await answer_probes(scenario, report.transcript, report.final_state, sandbox)
    reasons = [f"no transcript item notices when the answer has {p.mutation}"
               for p in report.answer_probes if not p.caught_by]
    if truncated:
        reasons.append(f"only the first {len(report.answer_probes)} answer probes were run")
    return GateStep(name="answer_probes", status="fail" if reasons else "pass", reasons=reasons)
