"""Validator throughput: the sandbox (worker processes with limits) vs EnvScaler's in-process `exec`.

    python benchmarks/validator_bench.py [--scenarios 200] [--records 50] [--workers 2] [--concurrency 8]

Each synthetic scenario has 5 typical validators (lookups, comprehensions, comparisons with the initial
state) over a shop state with `--records` orders and products, and 5 typical transcript validators (the
`transcript_checks` helpers) over a transcript of 8 lookups and a 3-sentence answer. Prints checks/s for
each way of running them.
"""

from __future__ import annotations

import argparse
import builtins
import copy
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.scoring.sandbox import ValidatorSandbox

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


def make_transcript(final: dict[str, Any], run: int) -> dict[str, Any]:
    """8 calls (7 lookups of orders from the state, then the cancellation) and a 3-sentence answer."""
    calls = [{"name": "get_order", "arguments": {"order_id": f"O{i}"},
              "result": {"success": True, "data": final["orders"].get(f"O{i}")}, "is_error": False}
             for i in range(1, 8)]
    calls.append({"name": "cancel_order", "arguments": {"order_id": "O1"},
                  "result": {"success": True, "message": "cancelled"}, "is_error": False})
    answer = (f"I looked up your orders (request {run}). Order O1, with a total of $3.50, has been cancelled on "
              "January 2, 2025. A refund note was added, and nothing else was changed.")
    return {"calls": calls, "answer": answer, "told_user": [answer]}


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


def in_process(initial: dict[str, Any], finals: list[dict[str, Any]], transcripts: bool = False) -> float:
    """EnvScaler's way: exec with full builtins in this process, one shared final_state, no limits."""
    if transcripts:
        sys.modules.setdefault("transcript_checks", importlib.import_module("envscaler_mcp.scoring.transcript_checks"))
    sources = TRANSCRIPT_VALIDATORS if transcripts else VALIDATORS
    n_scenarios = len(finals)
    start = time.perf_counter()
    passed = 0
    for final in finals:
        argument = make_transcript(final, final["run"]) if transcripts else final
        for src in sources:
            env = {"__builtins__": builtins, "initial_state": copy.deepcopy(initial)}
            exec(src, env)
            passed += env["check_func"](argument) is True
    assert passed == n_scenarios * len(sources)
    return n_scenarios * len(sources) / (time.perf_counter() - start)


async def sandboxed(initial: dict[str, Any], finals: list[dict[str, Any]], workers: int, concurrency: int,
                    transcripts: bool = False) -> float:
    """Through the sandbox, `concurrency` scenarios at a time (as an eval run scores episodes)."""
    kind = "transcript" if transcripts else "state"
    sources = TRANSCRIPT_VALIDATORS if transcripts else VALIDATORS
    items = [ChecklistItem(id=f"c{i}", description="", validator=v, kind=kind) for i, v in enumerate(sources)]
    n_scenarios = len(finals)
    passed = 0
    async with ValidatorSandbox(timeout_s=2.0, memory_mb=512, workers=workers) as sandbox:
        warm = {**finals[0], "run": -1}
        await sandbox.run(items, initial, warm, make_transcript(warm, -1))
        limiter = anyio.Semaphore(concurrency)

        async def one(final: dict[str, Any]) -> None:
            nonlocal passed
            async with limiter:
                results = await sandbox.run(items, initial, final, make_transcript(final, final["run"]))
            passed += sum(r.passed for r in results)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for final in finals:
                tg.start_soon(one, final)
        elapsed = time.perf_counter() - start
    assert passed == n_scenarios * len(sources), passed
    return n_scenarios * len(sources) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--records", type=int, default=50, help="orders and products in the state")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    initial, final = make_states(args.records)
    size_kb = len(json.dumps(final)) / 1024
    print(f"state: {args.records} orders + {args.records} products ({size_kb:.0f} KB JSON); "
          f"{args.scenarios} scenarios x {len(VALIDATORS)} validators")
    finals = distinct_finals(final, args.scenarios)
    label = f"sandbox, {args.workers} workers, {args.concurrency} scenarios in flight"
    print(f"{'':<50} {'state checks':>14} {'transcript checks':>19}")
    rows = [("in-process exec (EnvScaler, no isolation)", lambda t: in_process(initial, finals, t)),
            ("sandbox, 1 worker, one scenario at a time", lambda t: anyio.run(sandboxed, initial, finals, 1, 1, t)),
            (label, lambda t: anyio.run(sandboxed, initial, finals, args.workers, args.concurrency, t))]
    for name, rate in rows:
        print(f"{name:<50} {rate(False):8.0f} chk/s {rate(True):12.0f} chk/s")


if __name__ == "__main__":
    main()
