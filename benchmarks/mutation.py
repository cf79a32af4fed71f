"""One-line mutants of the code that decides verdicts, and the share the test suite kills.

    .venv/bin/python benchmarks/mutation.py [--per-module N] [--module PATH ...] [--seed S] [--timeout SECONDS]

Each mutant changes one operator or constant on one line of a module (== -> !=, < -> <=, and -> or,
`not x` -> `x`, True <-> False, a number n -> n + 1, `return x` -> `return not x` for bool-looking returns),
then the tests mapped to that module run (`pytest -x -q`, a time limit per mutant). A mutant is killed when
some test fails or the run times out (counted apart), survives when every test passes. Mutants are made in a
scratch copy of the tree (imported through PYTHONPATH, by the tests and by the workers and servers they start),
so the working tree is never changed and can be edited during a run. Before any mutant, each module's tests
must pass unmutated in the copy. Prints one row per module and every survivor, so a test can be written for it.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module -> the tests that judge it: every module of scoring/, qa/ and the harness that decides a verdict, with
# its unit tests and the tests that run whole episodes on every transport
_STATE = ["tests/compare/test_statecheck.py", "tests/compare/test_statecheck_properties.py",
          "tests/harness/test_state_check.py", "tests/harness/test_check_outcomes.py"]
_ANSWERS = ["tests/transcript/test_claims.py", "tests/transcript/test_checks.py",
            "tests/security/test_answer_attacks.py"]
_TRANSPORTS = ["tests/harness/test_verdicts_transports.py"]
TARGETS: dict[str, list[str]] = {
    "envscaler_mcp/compare/statecheck.py": _STATE,
    "envscaler_mcp/compare/matching.py": [*_STATE, "tests/qa/test_seeded_defects.py"],
    "envscaler_mcp/compare/freefields.py": [*_STATE, "tests/foundation/test_free_fields.py",
                                            "tests/qa/test_state_gate.py"],
    "envscaler_mcp/compare/diff.py": ["tests/compare/test_diff.py", *_STATE],
    "envscaler_mcp/transcript/observation.py": ["tests/transcript/test_observation.py", "tests/harness/test_observe.py"],
    "envscaler_mcp/transcript/claims.py": _ANSWERS,
    "envscaler_mcp/transcript/facts.py": _ANSWERS,
    "envscaler_mcp/transcript/checks.py": [*_ANSWERS, "tests/harness/test_transcript_items.py"],
    "envscaler_mcp/scoring/metrics.py": ["tests/scoring/test_metrics.py", "tests/harness/test_episode.py"],
    "envscaler_mcp/qa/gate.py": ["tests/qa/test_gate.py", "tests/qa/test_gate_transcript.py",
                                 "tests/harness/test_turns.py::test_the_gate_judges_a_turn_item_on_the_references_state_at_that_turn"],
    "envscaler_mcp/qa/consistency.py": ["tests/qa/test_seeded_defects.py", "tests/harness/test_check_outcomes.py"],
    "envscaler_mcp/qa/grounding.py": ["tests/synth/scen/test_grounding.py", "tests/qa/test_seeded_defects.py"],
    "envscaler_mcp/qa/unasked.py": ["tests/qa/test_unasked.py", "tests/qa/test_seeded_defects.py"],
    "envscaler_mcp/references/replay.py": ["tests/references/test_replay.py", "tests/harness/test_observe.py",
                                           "tests/qa/test_unstable_results.py"],
    "envscaler_mcp/references/reference.py": ["tests/harness/test_state_check.py", "tests/qa/test_state_gate.py",
                                              "tests/references/test_store.py", "tests/qa/test_unstable_results.py",
                                              "tests/harness/test_turns.py"],
    "envscaler_mcp/harness/checks.py": ["tests/harness/test_check_outcomes.py", "tests/harness/test_episode.py",
                                        "tests/harness/test_transcript_items.py", *_TRANSPORTS],
    "envscaler_mcp/harness/turns.py": ["tests/harness/test_turns.py"],
    "envscaler_mcp/harness/observe.py": ["tests/harness/test_observe.py", *_TRANSPORTS],
    "envscaler_mcp/harness/faults.py": ["tests/harness/test_attribution.py"],
}

_SWAPS = {ast.Eq: "!=", ast.NotEq: "==", ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.In: "not in",
          ast.NotIn: "in", ast.Is: "is not", ast.IsNot: "is"}
_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.In: "in",
         ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


@dataclass
class Mutant:
    line: int  # 1-based
    before: str
    after: str

    def describe(self) -> str:
        return f"line {self.line}: {self.before.strip()!r} -> {self.after.strip()!r}"


def _replace_once(line: str, col: int, old: str, new: str) -> str | None:
    at = line.find(old, col)
    return None if at < 0 else line[:at] + new + line[at + len(old):]


def mutants(source: str) -> list[Mutant]:
    """Every one-line mutant of `source` this tool knows how to make (single-line nodes only)."""
    lines = source.splitlines(keepends=True)
    found: list[Mutant] = []
    docstrings = {n.body[0].value.lineno for n in ast.walk(ast.parse(source))
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}

    def add(node: ast.AST, old: str, new: str, col: int | None = None) -> None:
        lineno = getattr(node, "lineno", None)
        if lineno is None or lineno != getattr(node, "end_lineno", lineno) or lineno in docstrings:
            return
        line = lines[lineno - 1]
        changed = _replace_once(line, node.col_offset if col is None else col, old, new)  # type: ignore[attr-defined]
        if changed is not None and changed != line:
            found.append(Mutant(lineno, line, changed))

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _SWAPS:
            op = type(node.ops[0])
            add(node, f" {_TEXT[op]} ", f" {_SWAPS[op]} ", node.left.end_col_offset)  # type: ignore[arg-type]
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = (" and ", " or ") if isinstance(node.op, ast.And) else (" or ", " and ")
            add(node, old, new, node.values[0].end_col_offset)  # type: ignore[arg-type]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, "not ", "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            add(node, str(node.value), str(not node.value))
        elif isinstance(node, ast.Constant) and type(node.value) is int and node.value in (0, 1, 2):
            add(node, str(node.value), str(node.value + 1))
    return found


_SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache",
                               ".pytest_cache")


def scratch_copy(into: Path) -> Path:
    """A copy of the tree to mutate; its package shadows the editable install through PYTHONPATH."""
    tree = into / "tree"
    shutil.copytree(ROOT, tree, ignore=_SKIP, symlinks=True)
    return tree


def run_tests(tree: Path, tests: list[str], timeout_s: float) -> str:
    """'killed' (a test failed), 'timeout' or 'survived'."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=tree, env=env, capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "killed"


def imported_from(tree: Path) -> Path:
    """Where the tests' `import envscaler_mcp` finds the package."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", "import envscaler_mcp; print(envscaler_mcp.__file__)"], cwd=tree,
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    return Path(out).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-module", type=int, default=10, help="mutants drawn per module (0: all)")
    parser.add_argument("--module", action="append", help="only these modules (paths as in TARGETS)")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="seconds per mutant's test run (default: 4 x the unmutated run, at least 120)")
    args = parser.parse_args()
    unknown = sorted(set(args.module or []) - set(TARGETS))
    if unknown:
        sys.exit(f"error: not in TARGETS: {', '.join(unknown)}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("error: stopped (SIGTERM); the scratch copy is removed"))
    total_killed = total_timeouts = total = 0
    survivors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as scratch:
        tree = scratch_copy(Path(scratch))
        if imported_from(tree) != tree.resolve():
            sys.exit(f"error: the tests would not import the mutated copy in {tree}")
        print(f"{'module':45} {'mutants':>7} {'killed':>6} {'timeout':>7} {'share':>6}  seconds", flush=True)
        for module, tests in TARGETS.items():
            if args.module and module not in args.module:
                continue
            path = tree / module
            original = path.read_text()
            pool = mutants(original)
            rng = random.Random(f"{args.seed}:{module}")  # a module's draw does not depend on --module
            chosen = pool if not args.per_module else rng.sample(pool, min(args.per_module, len(pool)))
            started = time.monotonic()
            if run_tests(tree, tests, 1800.0) != "survived":
                sys.exit(f"error: the tests mapped to {module} fail (or hang) unmutated; fix them first")
            limit = args.timeout or max(120.0, 4 * (time.monotonic() - started))
            killed = timeouts = 0
            started = time.monotonic()
            for mutant in chosen:
                lines = original.splitlines(keepends=True)
                lines[mutant.line - 1] = mutant.after
                path.write_text("".join(lines))
                outcome = run_tests(tree, tests, limit)
                killed += outcome != "survived"
                timeouts += outcome == "timeout"
                if outcome == "survived":
                    survivors.append(f"{module} {mutant.describe()}")
                    print("  survived:", mutant.describe(), flush=True)
            path.write_text(original)
            total += len(chosen)
            total_killed += killed
            total_timeouts += timeouts
            share = killed / len(chosen) if chosen else float("nan")
            print(f"{module:45} {len(chosen):7} {killed:6} {timeouts:7} {share:6.0%}  "
                  f"{time.monotonic() - started:.0f} (of {len(pool)} possible)", flush=True)
    print(f"{'all':45} {total:7} {total_killed:6} {total_timeouts:7} {total_killed / max(total, 1):6.0%}")
    for line in survivors:
        print("survived:", line)


if __name__ == "__main__":
    main()
