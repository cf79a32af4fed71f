"""Validator throughput: the sandbox with its OS layers on and off, side by side, vs in-process `exec`.

    python benchmarks/validator_bench.py [--states catalog|synthetic|transcript] [--rounds 5] [--workers 2]
                                         [--concurrency 8] [--trials-per-request N]
                                         [--scenarios 200] [--records 50]   (synthetic only)

`--states catalog` (the default): every bundled scenario with a reference solution, its validators run on
the final state that solution leaves (50-120 KB of JSON; transcript items on the reference transcript),
`--rounds` times. `--states synthetic`: 5 typical validators per synthetic scenario over a shop state with
`--records` orders and products. `--states transcript`: 5 typical transcript validators (the
`transcript_checks` helpers) per synthetic scenario, on a transcript of 8 lookups and a 3-sentence answer.
The synthetic scenarios share one checklist and one initial state, so they are checked as trials of one
scenario: when every worker is busy they go together in one request (`--trials-per-request 1`: never).
For each way of running them prints checks/s, and CPU time per check of the calling process and of the
workers (all their processes), which is steadier than wall time on a shared machine. Every check must
pass, so a broken run cannot report a rate.
"""

from __future__ import annotations

import argparse
import builtins
import copy
import importlib
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.sandbox import validators as sandbox_module
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.transcript.record import call_record, make_transcript

# items, initial state, final state, transcript (None when no item reads one)
Job = tuple[list[ChecklistItem], dict[str, Any], dict[str, Any], dict[str, Any] | None]

VALIDATORS = [
    "def check_func(final_state):\n    return final_state['orders']['O1']['status'] == 'cancelled'\n",
    "def check_func(final_state):\n"
    "    return final_state['products']['P2']['stock'] == initial_state['products']['P2']['stock'] + 1\n",
    "def check_func(final_state):\n"
    "    return any(n['order_id'] == 'O1' and 'refund' in n['text'] for n in final_state['notes'])\n",
    "def check_func(final_state):\n"
    "    changed = [k for k, v in final_state['orders'].items() if v != initial_state['orders'].get(k)]\n"
    "    return changed == ['O1']\n",
    "import datetime\n"
    "def check_func(final_state):\n"
    "    d = datetime.date.fromisoformat(final_state['orders']['O1']['updated'])\n"
    "    return d >= datetime.date(2025, 1, 1)\n",
]


TRANSCRIPT_VALIDATORS = [
    "from transcript_checks import says\ndef check_func(transcript):\n    return says(transcript, 'O1', 'cancelled')\n",
    "from transcript_checks import says\ndef check_func(transcript):\n    return says(transcript, 3.5, '2025-01-02')\n",
    "from transcript_checks import called\n"
    "def check_func(transcript):\n    return called(transcript, 'get_order', order_id='O1')\n",
    "from transcript_checks import called, not_called\n"
    "def check_func(transcript):\n"
    "    return called(transcript, 'cancel_order', order_id='o1') and not_called(transcript, 'delete_order')\n",
    "def check_func(transcript):\n"
    "    return len(transcript['calls']) == 8 and all(not c['is_error'] for c in transcript['calls'])\n",
]


def make_transcript_of(final: dict[str, Any]) -> dict[str, Any]:
    """8 calls (7 lookups of orders from the state, then the cancellation) and a 3-sentence answer."""
    calls = [call_record("get_order", {"order_id": f"O{i}"},
                         json.dumps({"success": True, "data": final["orders"].get(f"O{i}")}), False)
             for i in range(1, 8)]
    calls.append(call_record("cancel_order", {"order_id": "O1"}, '{"success": true}', False))
    answer = (f"I looked up your orders (request {final.get('run', 0)}). Order O1, with a total of $3.50, has been "
              "cancelled on January 2, 2025. A refund note was added, and nothing else was changed.")
    return make_transcript(calls, answer)


def make_states(records: int) -> tuple[dict[str, Any], dict[str, Any]]:
    initial = {
        "orders": {f"O{i}": {"id": f"O{i}", "customer": f"C{i % 7}", "status": "pending", "total": i * 3.5,
                             "items": [{"product": f"P{j}", "qty": 1 + j % 3} for j in range(i % 4 + 1)],
                             "updated": "2024-12-30"} for i in range(1, records + 1)},
        "products": {f"P{i}": {"id": f"P{i}", "name": f"Product {i}", "stock": 10 + i, "price": 2.0 * i}
                     for i in range(1, records + 1)},
        "notes": [],
        "today": "2025-01-02",
    }
    final = copy.deepcopy(initial)
    final["orders"]["O1"].update(status="cancelled", updated="2025-01-02")
    final["products"]["P2"]["stock"] += 1
    final["notes"].append({"order_id": "O1", "text": "refund requested"})
    return initial, final


def distinct_finals(final: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """One final state per scenario (as in a real run), so no cache can serve a repeat."""
    out = []
    for i in range(n):
        f = copy.deepcopy(final)
        f["run"] = i
        out.append(f)
    return out


def synthetic_jobs(records: int, scenarios: int, transcripts: bool = False) -> list[Job]:
    """`scenarios` jobs of the 5 VALIDATORS on the shop state (one distinct final state each), or of the 5
    TRANSCRIPT_VALIDATORS on a transcript made from it."""
    initial, final = make_states(records)
    if not transcripts:
        items = [ChecklistItem(id=f"c{i}", description="", validator=v) for i, v in enumerate(VALIDATORS)]
        return [(items, initial, f, None) for f in distinct_finals(final, scenarios)]
    items = [ChecklistItem(id=f"c{i}", description="", validator=v, kind="transcript")
             for i, v in enumerate(TRANSCRIPT_VALIDATORS)]
    return [(items, initial, f, make_transcript_of(f)) for f in distinct_finals(final, scenarios)]


def catalog_jobs() -> list[Job]:
    """Every bundled scenario with a reference solution, with the final state its solution leaves."""
    from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for

    jobs = []
    for env_id in list_env_ids():
        skeleton = get_skeleton(env_id)
        namespace: dict[str, Any] = {"__name__": "bench_env"}
        exec(compile(skeleton.class_source, "<environment>", "exec"), namespace)
        cls = namespace[skeleton.class_name]
        for scenario in scenarios_for(env_id):
            if not scenario.reference_solution:
                continue
            try:
                env = cls()
            except TypeError:
                env = cls({})
            for key, value in copy.deepcopy(scenario.initial_state).items():
                setattr(env, key, value)
            calls = [call_record(c.tool, c.arguments, json.dumps(getattr(env, c.tool)(**c.arguments)), False)
                     for c in scenario.reference_solution]
            final = {k: v for k, v in vars(env).items() if not k.startswith("_")}
            transcript = make_transcript(calls, scenario.reference_answer or "") \
                if any(c.kind == "transcript" for c in scenario.checklist) else None
            jobs.append((list(scenario.checklist), scenario.initial_state, final, transcript))
    return jobs


def in_process(jobs: list[Job]) -> float:
    """EnvScaler's way: exec with full builtins in this process, one shared final_state, no limits."""
    sys.modules.setdefault("transcript_checks", importlib.import_module("envscaler_mcp.transcript.checks"))
    n = sum(len(items) for items, _, _, _ in jobs)
    start = time.perf_counter()
    passed = 0
    for items, initial, final, transcript in jobs:
        for item in items:
            env = {"__builtins__": builtins, "initial_state": copy.deepcopy(initial)}
            exec(item.validator or "", env)
            passed += env["check_func"](transcript if item.kind == "transcript" else final) is True
    assert passed == n, (passed, n)
    return n / (time.perf_counter() - start)


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


async def sandboxed(jobs: list[Job], rounds: int, workers: int, concurrency: int,
                    isolation: bool) -> tuple[float, float]:
    """Through the sandbox, `concurrency` scenarios at a time (as an eval run scores episodes).
    Returns (checks/s, CPU seconds of this process per check)."""
    n = rounds * sum(len(items) for items, _, _, _ in jobs)
    passed = 0
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=512, workers=workers, isolation=isolation) as sandbox:
        await sandbox.run(*jobs[0])  # warm-up
        limiter = anyio.Semaphore(concurrency)

        async def one(job: Job) -> None:
            nonlocal passed
            async with limiter:
                results = await sandbox.run(*job)
            passed += sum(r.passed for r in results)

        start, cpu = time.perf_counter(), _cpu(resource.RUSAGE_SELF)
        async with anyio.create_task_group() as tg:
            for _ in range(rounds):
                for job in jobs:
                    tg.start_soon(one, job)
        elapsed, cpu = time.perf_counter() - start, _cpu(resource.RUSAGE_SELF) - cpu
    assert passed == n, (passed, n)
    return n / elapsed, cpu / n


def row(label: str, rate: float, parent_cpu: float | None = None, workers_cpu: float | None = None) -> None:
    cpu = "" if parent_cpu is None else f"   caller {1000 * parent_cpu:5.2f} ms/check"
    cpu += "" if workers_cpu is None else f"   workers {1000 * workers_cpu:5.2f} ms/check"
    print(f"{label:<58} {rate:7.0f} checks/s{cpu}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", choices=["catalog", "synthetic", "transcript"], default="catalog")
    parser.add_argument("--rounds", type=int, default=5, help="catalog: times every scenario is scored")
    parser.add_argument("--scenarios", type=int, default=200, help="synthetic: number of scenarios")
    parser.add_argument("--records", type=int, default=50, help="synthetic: orders and products in the state")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--trials-per-request", type=int, default=None,
                        help="at most this many trials of a scenario go in one request (1: never grouped)")
    args = parser.parse_args()
    if args.trials_per_request is not None:
        sandbox_module._MAX_TRIALS = args.trials_per_request
    if args.states == "catalog":
        jobs, rounds = catalog_jobs(), args.rounds
    else:
        jobs, rounds = synthetic_jobs(args.records, args.scenarios, args.states == "transcript"), 1
    sizes = [len(json.dumps(final)) / 1024 for _, _, final, _ in jobs]
    print(f"{args.states} states: {len(jobs)} scenarios, {sum(len(i) for i, _, _, _ in jobs)} checks per round, "
          f"final states {min(sizes):.0f}-{max(sizes):.0f} KB; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    row("in-process exec (EnvScaler, no isolation)", in_process(jobs))
    n = rounds * sum(len(items) for items, _, _, _ in jobs)
    # The layers off and on, alternated twice so that a change in the machine's load hits both alike.
    for label, isolation in [("off", False), ("on", True), ("off", False), ("on", True)]:
        for workers, concurrency in ((1, 1), (args.workers, args.concurrency)):
            before = _cpu(resource.RUSAGE_CHILDREN)
            rate, parent = anyio.run(sandboxed, jobs, rounds, workers, concurrency, isolation)
            spent = (_cpu(resource.RUSAGE_CHILDREN) - before) / n  # includes the workers' start-up
            row(f"sandbox, OS layers {label}, {workers} worker(s), {concurrency} in flight", rate, parent, spent)


if __name__ == "__main__":
    main()
