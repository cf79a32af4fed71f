"""How often `says` is fooled: an adversarial answer set over the bundled read-only scenarios.

    python benchmarks/answers_bench.py [--answers tests/transcript/data/answers.jsonl] [--verbose]

Each line of the answer set names a bundled scenario (by title), an answer an agent might give, what kind of
answer it is (`right`: a correct paraphrase; `hedge`, `negation`, `list`, `inversion`: wrong answers that
state the expected values) and the verdict it deserves (`pass`: every transcript item of the scenario holds;
`fail`: some item must not). The scenario's own reference answers are added as `reference` answers that must
pass. The scenario's transcript validators run in this process on a transcript of the reference solution's
calls and the answer (the validators are the catalog's own; the sandbox runs the same `transcript_checks`).

Prints, per kind and overall, how many answers got the wrong verdict: the false-pass rate (wrong answers that
passed, over the wrong answers) and the false-fail rate (right answers that failed, over the right answers).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from envscaler_mcp.catalog.store import load_scenarios  # noqa: E402
from envscaler_mcp.scenario.models import Scenario  # noqa: E402
from envscaler_mcp.transcript import checks as transcript_checks  # noqa: E402
from envscaler_mcp.transcript import evidence as transcript_evidence  # noqa: E402
from envscaler_mcp.transcript.record import make_transcript  # noqa: E402

DEFAULT_ANSWERS = ROOT / "tests" / "transcript" / "data" / "answers.jsonl"


def read_only_scenarios() -> dict[str, Scenario]:
    """The bundled scenarios with transcript items, by title."""
    out: dict[str, Scenario] = {}
    for path in sorted((ROOT / "scenarios").glob("*.jsonl")):
        for scenario in load_scenarios(path):
            if any(item.kind == "transcript" for item in scenario.checklist):
                out[scenario.title] = scenario
    return out


def answer_set(path: Path, scenarios: dict[str, Scenario]) -> list[dict[str, Any]]:
    """The answers of `path`, then each scenario's reference answer (kind `reference`, expected to pass)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    unknown = sorted({r["scenario"] for r in rows} - set(scenarios))
    if unknown:
        raise SystemExit(f"error: {path} names scenarios that are not bundled: {', '.join(unknown)}")
    rows += [{"scenario": title, "kind": "reference", "expect": "pass", "answer": s.reference_answer}
             for title, s in scenarios.items() if s.reference_answer]
    return rows


def verdict(scenario: Scenario, answer: str) -> tuple[bool, list[str]]:
    """(every transcript item holds, the evidence of the items that did not)."""
    sys.modules.setdefault("transcript_checks", transcript_checks)
    calls = [{"name": c.tool, "arguments": c.arguments, "result": {"success": True}, "is_error": False}
             for c in scenario.reference_solution]
    transcript = make_transcript(calls, answer)
    failed: list[str] = []
    for item in scenario.checklist:
        if item.kind != "transcript" or not item.validator:
            continue
        scope: dict[str, Any] = {"initial_state": scenario.initial_state}
        exec(compile(item.validator, item.id, "exec"), scope)  # the catalog's own validators
        transcript_evidence.begin()
        ok = scope["check_func"](transcript) is True
        evidence = transcript_evidence.take()
        if not ok:
            failed.append(f"{item.id}: " + " | ".join(evidence))
    return not failed, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=Path, default=DEFAULT_ANSWERS)
    parser.add_argument("--verbose", "-v", action="store_true", help="print every wrong verdict and why")
    args = parser.parse_args()
    scenarios = read_only_scenarios()
    rows = answer_set(args.answers, scenarios)
    by_kind: dict[str, list[bool]] = defaultdict(list)  # kind -> [verdict right?]
    wrong_pass = right_fail = n_wrong = n_right = 0
    for row in rows:
        passed, why = verdict(scenarios[row["scenario"]], row["answer"])
        expected = row["expect"] == "pass"
        by_kind[row["kind"]].append(passed == expected)
        n_right += expected
        n_wrong += not expected
        wrong_pass += passed and not expected
        right_fail += expected and not passed
        if args.verbose and passed != expected:
            print(f"[{row['kind']}] expected {row['expect']}, got {'pass' if passed else 'fail'}: "
                  f"{row['scenario']}\n  {row['answer']}")
            for line in why:
                print(f"    {line}")
    print(f"{'kind':<10} {'answers':>7} {'wrong verdicts':>14}")
    for kind in sorted(by_kind):
        print(f"{kind:<10} {len(by_kind[kind]):>7} {by_kind[kind].count(False):>14}")
    print(f"false-pass: {wrong_pass}/{n_wrong} ({wrong_pass / max(n_wrong, 1):.0%}) of wrong answers passed")
    print(f"false-fail: {right_fail}/{n_right} ({right_fail / max(n_right, 1):.0%}) of right answers failed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
