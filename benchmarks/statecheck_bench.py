"""Cost of the state check on the bundled catalog, beside the cost of the episode it scores.

    python benchmarks/statecheck_bench.py [--transport http] [--envs ecommerce_orders,it_helpdesk]

For every scenario with a reference solution, on one server per environment (started before timing):

* the reference final state: `references.reference.build_reference` (two replays of the reference solution, run at
  the same time; paid once per scenario per run);
* one oracle episode through `harness.episode.run_episode` (tools over MCP, final state, validators in the
  sandbox, the state check): what a run pays per episode;
* the comparison alone (`Reference.check`) on the reference's own final state (pass) and on the state the
  reference plus one harmful extra call leaves (fail, with its unexpected changes), and the validators
  alone on the same final state.

Prints per environment and overall the means, and the state check's share of an episode for 1 and 3 trials
per scenario ((replay / trials + comparison) / episode).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from statistics import fmean

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.wrong_probes import harmful_extra_call
from envscaler_mcp.references.reference import build_reference
from envscaler_mcp.sandbox.validators import ValidatorSandbox


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.1f} ms"


async def measure(env_id: str, transport: str, sandbox: ValidatorSandbox, checker: SandboxChecker) -> dict[str, list[float]]:
    """Per-scenario timings of one environment."""
    free = get_skeleton(env_id).free_fields
    rows: dict[str, list[float]] = {k: [] for k in ("reference", "episode", "compare_pass", "compare_fail",
                                                      "validators", "changes")}
    async with launch_server(env_id, transport=transport) as server:  # type: ignore[arg-type]
        for sc in scenarios_for(env_id):
            if not sc.reference_solution:
                continue
            t = time.perf_counter()
            reference = await build_reference(sc, server.episode, free)
            rows["reference"].append(time.perf_counter() - t)
            assert reference.final_state is not None, reference.reason
            t = time.perf_counter()
            result = await run_episode(sc, source=server, agent=OraclePolicy(sc), checker=checker,
                                       config=EpisodeConfig(), reference=reference)
            rows["episode"].append(time.perf_counter() - t)
            assert result.success and result.state_check == "pass", (sc.id, result.state_check_reason)
            t = time.perf_counter()
            assert reference.check(reference.final_state).status == "pass"
            rows["compare_pass"].append(time.perf_counter() - t)
            t = time.perf_counter()
            await sandbox.run(sc.checklist, sc.initial_state, reference.final_state)
            rows["validators"].append(time.perf_counter() - t)
            extra = await harmful_extra_call(sc, server.episode)
            if extra.final_state is not None:
                t = time.perf_counter()
                verdict = reference.check(extra.final_state)
                rows["compare_fail"].append(time.perf_counter() - t)
                assert verdict.status == "fail"
                rows["changes"].append(len(verdict.changes))
    return rows


def _line(name: str, rows: dict[str, list[float]]) -> str:
    episode, ref = fmean(rows["episode"]), fmean(rows["reference"])
    compare = fmean(rows["compare_pass"] + rows["compare_fail"])
    share1 = (ref + compare) / episode
    share3 = (ref / 3 + compare) / episode
    return (f"| {name} | {len(rows['episode'])} | {episode:.3f} s | {ref:.3f} s | {_ms(fmean(rows['compare_pass']))} | "
            f"{_ms(fmean(rows['compare_fail'])) if rows['compare_fail'] else '-'} | {_ms(fmean(rows['validators']))} | "
            f"{100 * share1:.0f}% | {100 * share3:.0f}% |")


async def main_async(envs: list[str], transport: str) -> None:
    print(f"load average at start: {os.getloadavg()[0]:.1f}; transport {transport}")
    print("| environment | scenarios | oracle episode | reference (2 replays) | compare (pass) | compare (fail) | "
          "validators | state check share, 1 trial | 3 trials |")
    print("|---|---|---|---|---|---|---|---|---|")
    total: dict[str, list[float]] = {}
    async with ValidatorSandbox(timeout_s=2.0, workers=1) as sandbox, SandboxChecker(workers=1) as checker:
        for env in envs:
            rows = await measure(env, transport, sandbox, checker)
            for k, v in rows.items():
                total.setdefault(k, []).extend(v)
            print(_line(env, rows), flush=True)
    print(_line("overall", total))
    print(f"mean unexpected changes found per harmful extra call: {fmean(total['changes']):.1f}; "
          f"load average at end: {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", default="http", choices=["http", "stdio", "memory"])
    parser.add_argument("--envs", default="", help="Comma list (default: every bundled environment).")
    args = parser.parse_args()
    envs = [e for e in args.envs.split(",") if e] or list_env_ids()
    anyio.run(main_async, envs, args.transport)


if __name__ == "__main__":
    main()
