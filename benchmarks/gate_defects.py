"""What the scenario QA gate catches: known-bad scenarios seeded from the bundled catalog's good ones, one kind
of defect at a time (tests/qa/seeded_defects.py), gated with the catalog's own options; and the good ones,
for false rejections. Prints a table: per kind, scenarios seeded, caught, and by which gate step.

    .venv/bin/python benchmarks/gate_defects.py [--per-kind 12] [--mutation]
    .venv/bin/python benchmarks/gate_defects.py --tools [--per-kind 12]

With --tools it measures the environment check's tool coverage instead: broken tools and unreachable lookups
seeded into the bundled environments' code (tests/qa/seeded_tool_defects.py), caught when the mutated tool is
not proven to work, and false rejections: the bundled environments' tools not proven to work.

The extra destructive call is found by replay on a server of the environment (one of the reference's own
state-changing calls aimed at another record the task does not name, the first the environment accepts and that
changes the state). A seeded reference whose extra call still fails in the gate's replay is not a seeded defect:
it is counted apart ("not seeded"), not as caught.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.qa.gate import GateReport
from envscaler_mcp.scenario.models import Scenario
from tests.qa.seeded_defects import KINDS, reference_with_an_accepted_extra_call
from tests.qa.seeded_tool_defects import TOOL_KINDS, prove, seeded_tools

EXTRA = "reference with an extra destructive call"


async def extra_calls(envs: list[str], rounds: int) -> dict[str, list[Scenario | None]]:
    """{env: for each of its first `rounds` scenarios, the reference with an extra call it accepts, or None}:
    found by replaying candidate calls on a server of the environment."""
    out: dict[str, list[Scenario | None]] = {}
    for env in envs:
        skeleton = get_skeleton(env)
        async with launch_server(skeleton, transport="pipe") as server:
            out[env] = [await reference_with_an_accepted_extra_call(s, server.episode, skeleton.success_convention)
                        for s in _seedable(env)[:rounds]]
    return out


def _seedable(env: str) -> list[Scenario]:
    return [s for s in scenarios_for(env) if s.reference_solution and s.reference_answer is None]


async def seeded(per_kind: int) -> tuple[list, list[str]]:
    """[(skeleton, [scenarios])] with every seeded scenario, and the kind of each, in the order check_groups
    reports them (a scenario's id leaves its reference solution out, so ids do not tell the seeds apart)."""
    kinds_of: dict[str, list[str]] = defaultdict(list)
    per_env: dict[str, list] = defaultdict(list)
    counts: Counter[str] = Counter()
    envs = [e for e in list_env_ids() if get_skeleton(e).provenance.source != "synthesized"]
    extras = await extra_calls(envs, rounds=10)
    for round_ in range(10):
        for env in envs:
            scenarios = _seedable(env)
            if round_ >= len(scenarios):
                continue
            good = scenarios[round_]
            makers = {**KINDS, EXTRA: lambda _, e=env, n=round_: extras[e][n]}
            for kind, make in makers.items():
                if counts[kind] >= per_kind:
                    continue
                bad = make(good)
                if bad is not None:
                    kinds_of[env].append(kind)
                    per_env[env].append(bad)
                    counts[kind] += 1
    envs_seeded = list(per_env)
    return ([(get_skeleton(env), per_env[env]) for env in envs_seeded],
            [kind for env in envs_seeded for kind in kinds_of[env]])


def failing_steps(report: GateReport) -> list[str]:
    return [s.name for s in report.steps if s.status == "fail"]


async def main(per_kind: int, mutation: bool) -> None:
    groups, kinds = await seeded(per_kind)
    reports = await check_groups(groups, GateSettings(transport="pipe", mutation=mutation))
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for report, kind in zip(reports, kinds, strict=True):
        steps = failing_steps(report)
        if kind == EXTRA and "replay" in steps:
            table[kind]["not seeded"] += 1
            continue
        table[kind]["seeded"] += 1
        table[kind]["caught" if steps else "missed"] += 1
        for step in steps:
            table[kind][f"by {step}"] += 1
    good = [(get_skeleton(e), [s for s in scenarios_for(e)]) for e in list_env_ids()
            if get_skeleton(e).provenance.source != "synthesized"]
    good_reports = await check_groups(good, GateSettings(transport="pipe", mutation=mutation))
    rejected = [r for r in good_reports if not r.passed]
    print(f"{'defect kind':38} {'seeded':>6} {'caught':>6} {'rate':>6}  by step")
    for kind in [*KINDS, EXTRA]:
        row = table[kind]
        rate = row["caught"] / row["seeded"] if row["seeded"] else float("nan")
        steps = ", ".join(f"{k[3:]} {v}" for k, v in sorted(row.items()) if k.startswith("by "))
        extra = f" ({row['not seeded']} not seeded: the extra call was refused)" if row["not seeded"] else ""
        print(f"{kind:38} {row['seeded']:6} {row['caught']:6} {rate:6.0%}  {steps}{extra}")
    print(f"good hand-written scenarios rejected: {len(rejected)} of {len(good_reports)}"
          + "".join(f"\n  {r.env_id}/{r.scenario_id}: {r.reasons()[:2]}" for r in rejected))


async def tool_main(per_kind: int) -> None:
    envs = [e for e in list_env_ids() if get_skeleton(e).provenance.source != "synthesized"]
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for kind, env, tool, mutant in seeded_tools(per_kind, envs):
        proof = (await prove(mutant, env, [tool]))[tool]
        table[kind]["seeded"] += 1
        table[kind]["caught" if proof.status != "works" else "missed"] += 1
        table[kind][proof.status] += 1
        if proof.status == "works":
            print(f"  missed: {kind} in {env}.{tool}: works with {proof.example}")
    print(f"{'defect kind':22} {'seeded':>6} {'caught':>6} {'rate':>6}  status")
    for kind in TOOL_KINDS:
        row = table[kind]
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(row.items()) if k not in ("seeded", "caught", "missed"))
        print(f"{kind:22} {row['seeded']:6} {row['caught']:6} {row['caught'] / max(row['seeded'], 1):6.0%}  {statuses}")
    total, rejected = 0, []
    for env in envs:
        proofs = await prove(get_skeleton(env), env)
        total += len(proofs)
        rejected += [f"{env}.{p.tool}: {p.status} ({p.detail[:120]})" for p in proofs.values() if p.status != "works"]
    print(f"bundled tools not proven to work: {len(rejected)} of {total}" + "".join(f"\n  {r}" for r in rejected))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=12)
    parser.add_argument("--mutation", action="store_true", help="also run the mutation test and wrong probes")
    parser.add_argument("--tools", action="store_true", help="measure the tool coverage on seeded tool defects")
    args = parser.parse_args()
    if args.tools:
        anyio.run(tool_main, args.per_kind)
    else:
        anyio.run(main, args.per_kind, args.mutation)
