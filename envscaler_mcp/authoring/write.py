"""Gate hand-authored scenarios through the environment's generated server, then write the scenario set.

`main` is what every `environments/<env>/make_scenarios.py` calls: it builds the skeleton from the
authoring files (so the current environment.py is what runs), launches its server, runs the product's QA
gate (`qa.gate.check_scenario`: validators, initial-false, reference replay, final-true, wrong solutions) on
every scenario, and writes `scenarios/<env>.jsonl` only when every scenario passes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from envscaler_mcp import _interrupt
from envscaler_mcp._json import State
from envscaler_mcp.authoring.specs import CallSpec, with_wrong_solutions
from envscaler_mcp.catalog.store import save_scenarios
from envscaler_mcp.errors import EnvScalerError
from envscaler_mcp.launch import Transport
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.qa.gate import GateReport
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.build import build_skeleton_from_dir


def default_state(env_dir: Path) -> State:
    """The environment's default_state.json."""
    state: State = json.loads((Path(env_dir) / "default_state.json").read_text(encoding="utf-8"))
    return state


def scenarios_path(env_dir: Path, env_id: str) -> Path:
    """Where the catalog keeps an environment's scenario set: <root>/scenarios/<env>.jsonl beside
    <root>/environments/<env>/."""
    return Path(env_dir).resolve().parents[1] / "scenarios" / f"{env_id}.jsonl"


async def gate_scenarios(env_dir: Path, scenarios: list[Scenario], *, transport: Transport = "http"
                         ) -> list[GateReport]:
    """Run the QA gate on `scenarios` against a server rendered from the authoring files in `env_dir`."""
    skeleton = build_skeleton_from_dir(Path(env_dir))
    return await check_groups([(skeleton, scenarios)], GateSettings(transport=transport))


def print_reports(reports: list[GateReport], scenarios: list[Scenario]) -> None:
    """One line per scenario (ok / FAIL, id, difficulty, title), then the reasons of each failure or warning."""
    for report, sc in zip(reports, scenarios, strict=True):
        print(f"{'ok' if report.passed else 'FAIL':4} {sc.id} d={sc.difficulty} {sc.title}")
        for reason in report.reasons():
            print(f"     - {reason}")


def main(env_dir: Path, scenarios: list[Scenario], wrong: Mapping[str, Sequence[CallSpec]] | None = None, *,
         require_wrong: bool = True, argv: Sequence[str] | None = None) -> int:
    """Attach the wrong solutions (by title, see `with_wrong_solutions`), gate the scenarios and write them when
    all pass; print what happened and return the exit code (0 written or checked, 1 otherwise)."""
    parser = argparse.ArgumentParser(description="Gate this environment's scenarios and write its scenario set.")
    parser.add_argument("--check", action="store_true", help="gate only; write nothing")
    parser.add_argument("--transport", choices=["http", "stdio", "memory"], default="http",
                        help="how to run the server (default: http)")
    args = parser.parse_args(argv)
    env_ids = sorted({sc.env_id for sc in scenarios})
    if len(env_ids) != 1:
        print(f"error: expected the scenarios of one environment, got {env_ids or 'none'}")
        return 1
    try:
        scenarios = with_wrong_solutions(scenarios, wrong or {}, require=require_wrong)
        reports = _interrupt.run(lambda: gate_scenarios(env_dir, scenarios, transport=args.transport))
    except EnvScalerError as exc:
        print(f"error: {exc}")
        return 1
    print_reports(reports, scenarios)
    failed = sum(not r.passed for r in reports)
    if failed:
        print(f"{failed} of {len(reports)} scenario(s) failed the gate; nothing written.")
        return 1
    if args.check:
        print(f"{len(reports)} scenarios passed the gate (--check: nothing written)")
        return 0
    out = scenarios_path(env_dir, env_ids[0])
    save_scenarios(scenarios, out)
    print(f"wrote {len(scenarios)} scenarios to {out}, every one through the gate")
    return 0
