"""CPU per scenario of the gate's consistency step (qa/consistency.py), in this process, over a data home's scenarios.

Each scenario of the environments named is checked with its initial state as the reference's final state (what
the step costs on its own: indexing the records, the grounding questions; the replay is not run), in the order the
gate takes them (environment by environment), twice; prints the CPU time (time.process_time) per scenario of each
pass and how many problems were found (the same on every tree given the same home). Run it with each tree of the
code on PYTHONPATH to compare them:

    PYTHONPATH=TREE python benchmarks/consistency_bench.py --home HOME ENV [ENV ...]
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.qa.consistency import consistency_problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="A data home (scenarios/<env>.jsonl).")
    parser.add_argument("envs", nargs="+", help="Environment ids, in the order the gate takes them.")
    args = parser.parse_args()
    scenarios = [s for env in args.envs for s in load_scenarios(args.home / "scenarios" / f"{env}.jsonl")]
    finals = [copy.deepcopy(s.initial_state) for s in scenarios]
    for n in (1, 2):
        start = time.process_time()
        problems = sum(len(consistency_problems(s, final)) for s, final in zip(scenarios, finals, strict=True))
        used = time.process_time() - start
        print(f"pass {n}: {len(scenarios)} scenarios, {1000 * used / len(scenarios):.2f} ms CPU each, "
              f"{problems} problems")


if __name__ == "__main__":
    main()
