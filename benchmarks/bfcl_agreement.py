"""Agreement of our verdicts with BFCL's own multi-turn checker on the imported BFCL pack.

For every task: the ground truth, and perturbed trajectories (a read repeated, reads dropped, a turn's calls made
one turn early, one wrong argument, an extra state-changing call, an empty turn, and, where a turn has no ground
truth because the user left something out, that turn acting on a guess: the next turn's calls made there too),
each judged twice:
* by the project: a scripted agent (the oracle policy on the perturbed turns) through `run_episode` on the
  environment's launched server (pipe transport), the checklist in the validator sandbox, the state checked
  after every turn against the reference (the ground truth replayed through the same server);
* by BFCL: `multi_turn_checker` imported from the unzipped wheel (or tests/fixtures/bfcl), on the same calls.

    python benchmarks/bfcl_agreement.py --from /tmp/bfcl/whl --home /tmp/bfcl_home --category base [--limit N]
    python benchmarks/bfcl_agreement.py --from /tmp/bfcl/whl --home /tmp/bfcl_home --transcripts runs/RUN_ID

`--home` is imported first when it has no environments (`import bfcl --from ... --out HOME`). Prints agreement
per category and perturbation and lists every disagreement. With `--transcripts RUN_DIR`, a model's episodes
recorded by `eval --home HOME` are judged instead: the run's verdict beside BFCL's checker's on the same calls
(bfcl_transcripts.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `benchmarks.` imports

from benchmarks.bfcl_checker import bfcl_checker, call_text, checker_verdict
from envscaler_mcp.catalog.store import list_env_ids, load_scenarios, load_skeleton
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.interop.bfcl.importer import import_bfcl
from envscaler_mcp.interop.bfcl.source import CATEGORIES, BfclSource
from envscaler_mcp.launch import launch_server
from envscaler_mcp.references.reference import Reference, scenario_free_fields
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton

PERTURBATIONS = ("ground_truth", "extra_read", "reads_dropped", "one_turn_early", "wrong_argument",
                 "extra_state_change", "empty_turn", "acts_on_guess")
Turns = list[list[ToolCall]]


# ---- BFCL's side ---------------------------------------------------------------------------------------------

def bfcl_verdict(checker: Any, task: dict[str, Any], truth: list[list[str]], turns: Turns) -> tuple[bool, str]:
    """BFCL's verdict on `turns` (one model step per turn; a turn without calls decodes to nothing)."""
    return checker_verdict(checker, task, truth, [[[call_text(c) for c in calls]] if calls else [] for calls in turns])


# ---- the trajectories ----------------------------------------------------------------------------------------

def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 7
    if isinstance(value, str):
        return value + "_x"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["x"]
    return value


def perturbations(scenario: Scenario, kinds: dict[str, str]) -> dict[str, Turns]:
    """The ground truth's turns and each perturbation that applies to this task (kinds: tool -> kind)."""
    truth = [list(t.reference) for t in scenario.turns]
    out: dict[str, Turns] = {"ground_truth": truth}
    queries = [(k, c) for k, calls in enumerate(truth) for c in calls if kinds.get(c.tool) == "query"]
    if queries:  # harmless: the state BFCL compares is the same (a seeded generator may move: a private field)
        k, call = queries[-1]
        again = [list(calls) for calls in truth]
        again[k] = [*again[k], call]
        out["extra_read"] = again
    reads = [[c for c in calls if kinds.get(c.tool) != "query"] for calls in truth]
    if reads != truth:
        out["reads_dropped"] = reads
    later = next((k for k in range(1, len(truth)) if truth[k]), None)
    if later is not None:
        early = [list(calls) for calls in truth]
        early[later - 1] = early[later - 1] + early[later]
        early[later] = []
        out["one_turn_early"] = early
    spot = next(((k, n) for k, calls in enumerate(truth) for n, c in enumerate(calls) if c.arguments), None)
    if spot is not None:
        k, n = spot
        wrong = [list(calls) for calls in truth]
        call = wrong[k][n]
        key = next(iter(call.arguments))
        wrong[k][n] = ToolCall(tool=call.tool, arguments={**call.arguments, key: _wrong(call.arguments[key])})
        out["wrong_argument"] = wrong
    changes = [(k, c) for k, calls in enumerate(truth) for c in calls if kinds.get(c.tool) == "state_change"
               and c.tool != "cd"]
    if changes:
        k, call = changes[-1]
        extra = [list(calls) for calls in truth]
        extra[k] = [*extra[k], call]
        out["extra_state_change"] = extra
    hidden = {name for turn in scenario.turns for name in turn.tools_added}
    guess = next((k for k in range(len(truth) - 1) if not truth[k] and truth[k + 1]
                  and not {c.tool for c in truth[k + 1]} & hidden), None)
    if guess is not None:  # a turn BFCL does not judge (the user left something out): act on a guess, then again
        guessed = [list(calls) for calls in truth]
        guessed[guess] = list(truth[guess + 1])
        out["acts_on_guess"] = guessed
    last = max((k for k, calls in enumerate(truth) if calls), default=None)
    if last is not None:
        empty = [list(calls) for calls in truth]
        empty[last] = []
        out["empty_turn"] = empty
    return out


# ---- our side ------------------------------------------------------------------------------------------------

async def server_reference(server: Any, scenario: Scenario, skeleton: EnvSkeleton) -> Reference:
    """The reference of the state check: the ground truth replayed through the server, the state read at the end
    of every turn (as references.reference does, without its `did the call succeed` rule, see docs/bfcl.md)."""
    states = []
    async with server.episode(scenario.initial_state) as episode:
        for turn in scenario.turns:
            for call in turn.reference:
                await episode.call_tool(call.tool, call.arguments)
            states.append(await episode.get_state())
    return Reference(scenario=scenario, final_state=states[-1], turn_states=states[:-1],
                     free=scenario_free_fields(scenario, skeleton.free_fields))


async def our_verdict(server: Any, scenario: Scenario, turns: Turns, reference: Reference, checker: Any,
                      info: EnvInfo) -> tuple[bool, str]:
    """The project's verdict on an agent that makes `turns`' calls, turn by turn."""
    played = scenario.model_copy(update={"turns": [t.model_copy(update={"reference": calls})
                                                   for t, calls in zip(scenario.turns, turns, strict=True)]})
    result = await run_episode(scenario, source=server, agent=OraclePolicy(played), checker=checker,
                               env_info=info, reference=reference, config=EpisodeConfig(max_steps=400))
    why = [f"{c.id} failed" for c in result.checks if c.status != "pass"]
    if result.state_check != "pass":
        why.append(f"state check {result.state_check}: {result.state_check_reason[:120]}")
    return bool(result.success) and result.state_check == "pass", "; ".join(why) or result.status


@dataclass
class Outcome:
    task: str
    category: str
    perturbation: str
    bfcl: bool
    bfcl_reason: str
    ours: bool
    our_reason: str


async def judge_environment(home: Path, env: str, checker: Any, source: BfclSource, limit: int | None,
                            categories: list[str]) -> list[Outcome]:
    """Every perturbation of every scenario of one environment, judged by both."""
    skeleton = load_skeleton(home / "environments" / env)
    scenarios = [s for s in load_scenarios(home / "scenarios" / f"{env}.jsonl")
                 if s.extra["bfcl"]["category"] in categories]
    if not scenarios:
        return []
    tasks = {c: {str(t["id"]): t for t in source.tasks(c)} for c in categories}
    truths = {c: source.ground_truth(c) for c in categories}
    kinds = {t.name: t.kind for t in skeleton.tools}
    info = EnvInfo(name=skeleton.name, introduction=skeleton.introduction, rules=skeleton.rules)
    outcomes = []
    async with launch_server(skeleton, transport="pipe", scenarios=scenarios) as server, \
            SandboxChecker() as sandbox:
        for scenario in scenarios:
            meta = scenario.extra["bfcl"]
            task, truth = tasks[meta["category"]][meta["id"]], truths[meta["category"]][meta["id"]]
            reference = await server_reference(server, scenario, skeleton)
            for kind, turns in perturbations(scenario, kinds).items():
                theirs, their_reason = bfcl_verdict(checker, task, truth, turns)
                ours, our_reason = await our_verdict(server, scenario, turns, reference, sandbox, info)
                outcomes.append(Outcome(meta["id"], meta["category"], kind, theirs, their_reason, ours, our_reason))
    return outcomes


def report(outcomes: list[Outcome]) -> str:
    """Agreement per category and perturbation, then every disagreement."""
    lines = [f"{'category':<14}{'perturbation':<20}{'n':>5}{'agree':>7}{'bfcl ok':>9}{'ours ok':>9}"]
    groups: dict[tuple[str, str], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.category, o.perturbation), []).append(o)
    for category in CATEGORIES:
        rows = [(p, groups[(category, p)]) for p in PERTURBATIONS if (category, p) in groups]
        for p, group in rows:
            agree = sum(o.bfcl == o.ours for o in group)
            lines.append(f"{category:<14}{p:<20}{len(group):>5}{agree:>7}{sum(o.bfcl for o in group):>9}"
                         f"{sum(o.ours for o in group):>9}")
        if rows:
            every = [o for _, group in rows for o in group]
            lines.append(f"{category:<14}{'all':<20}{len(every):>5}{sum(o.bfcl == o.ours for o in every):>7}")
    lines.append(f"total agreement: {sum(o.bfcl == o.ours for o in outcomes)}/{len(outcomes)}")
    for o in outcomes:
        if o.bfcl != o.ours:
            lines.append(f"  disagree {o.task} {o.perturbation}: bfcl {'pass' if o.bfcl else 'fail'} "
                         f"({o.bfcl_reason or 'valid'}), ours {'pass' if o.ours else 'fail'} ({o.our_reason})")
    return "\n".join(lines)


async def measure(root: Path, home: Path, categories: list[str], limit: int | None, envs: list[str] | None = None
                  ) -> list[Outcome]:
    """Import when `home` is empty, then judge every environment (or those whose id holds one of `envs`)."""
    source = BfclSource(root)
    if not list_env_ids(home / "environments"):
        import_bfcl(root, home, categories, limit)
    checker = bfcl_checker(root)
    outcomes = []
    for env in list_env_ids(home / "environments"):
        if envs is None or any(part in env for part in envs):
            outcomes += await judge_environment(home, env, checker, source, limit, categories)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="root", type=Path, required=True, help="folder holding bfcl_eval/")
    parser.add_argument("--home", type=Path, required=True, help="data folder of `import bfcl` (made if empty)")
    parser.add_argument("--category", default="base")
    parser.add_argument("--limit", type=int, default=None, help="tasks per category (import only)")
    parser.add_argument("--env", default=None, help="only environments whose id holds one of these (comma list), "
                        "e.g. mathapi")
    parser.add_argument("--json", type=Path, default=None, help="write every outcome here")
    parser.add_argument("--transcripts", type=Path, default=None, metavar="RUN_DIR",
                        help="instead: judge the episodes an `eval --home HOME` run recorded in RUN_DIR by BFCL's "
                        "checker too (benchmarks/bfcl_transcripts.py)")
    args = parser.parse_args()
    if args.transcripts is not None:
        from benchmarks.bfcl_transcripts import judge_run, transcript_report

        judged, skipped = judge_run(args.transcripts, args.home, BfclSource(args.root), bfcl_checker(args.root))
        print(transcript_report(judged, skipped))
        if args.json:
            args.json.write_text(json.dumps([j.__dict__ for j in judged], indent=1))
        return
    categories = list(CATEGORIES) if args.category == "all" else args.category.split(",")
    started = time.perf_counter()
    envs = args.env.split(",") if args.env else None
    outcomes = anyio.run(measure, args.root, args.home, categories, args.limit, envs)
    print(report(outcomes))
    tasks = Counter(o.task for o in outcomes)
    print(f"{len(tasks)} tasks, {len(outcomes)} trajectories, {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))


if __name__ == "__main__":
    main()
