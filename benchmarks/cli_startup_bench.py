"""Command-line start-up time: this tree against an earlier commit, side by side, in one run.

    python benchmarks/cli_startup_bench.py [--before REF] [--rounds 7]

The earlier commit (default: `main`) is unpacked with `git archive` into a temporary folder; both trees run
under this interpreter, so only the code differs. For each command it prints the median wall time of
`--rounds` fresh processes (`python -c "...; from envscaler_mcp.cli import main; main()"` with the command's
arguments) and their median CPU time (user + system), each with its ratio.
Every process must exit as the command should (0, or 2 for the bad `--concurrency 0`), so a broken tree
cannot report a time. The goal is ≤0.5 s for `--help` and `list`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (arguments, exit code now, exit code before: None where the earlier tree failed differently, e.g. `--version`
# ended in "Missing command" and `--concurrency 0` in a traceback: they are timed all the same)
COMMANDS: list[tuple[list[str], int, int | None]] = [
    (["--version"], 0, None),
    (["--help"], 0, 0),
    (["list"], 0, 0),
    (["show", "library_loans"], 0, 0),
    (["eval", "--help"], 0, 0),
    (["eval", "--env", "library_loans", "--agent", "oracle", "--concurrency", "0"], 2, None),
]


def unpack(ref: str, into: Path) -> Path:
    """The tree of `ref` as a folder (package, catalog, templates)."""
    archive = into / "tree.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def time_command(tree: Path, args: list[str], expect: int | None, rounds: int) -> tuple[float, float]:
    """Median (wall seconds, CPU seconds) for a fresh process to run `envscaler-mcp ARGS` from `tree`. The
    CPU time (user + system of the child) is steadier than wall time on a shared machine."""
    code = (f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv = ['envscaler-mcp', *{args!r}]; "
            "from envscaler_mcp.cli import main; main()")
    env = dict(os.environ)
    env.pop("ENVSCALER_MCP_HOME", None)
    subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=False)  # warm the .pyc files
    times, cpu = [], []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if expect is not None and result.returncode != expect:
            raise SystemExit(f"{tree}: envscaler-mcp {' '.join(args)} exited {result.returncode}, not {expect}:\n"
                             f"{result.stderr.decode()[-2000:]}")
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="Git ref to compare against (default: main).")
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        before = unpack(opts.before, Path(tmp))
        print(f"load average {os.getloadavg()[0]:.1f}; median of {opts.rounds} processes; before = {opts.before}")
        print(f"{'command':<50} {'wall before':>11} {'after':>6} {'ratio':>6}   {'CPU before':>10} {'after':>6} "
              f"{'ratio':>6}")
        for args, expect, expect_before in COMMANDS:
            old_wall, old_cpu = time_command(before, args, expect_before, opts.rounds)
            new_wall, new_cpu = time_command(ROOT, args, expect, opts.rounds)
            label = " ".join(args)
            print(f"{label:<50} {old_wall:>10.2f}s {new_wall:>5.2f}s {old_wall / new_wall:>5.1f}x   "
                  f"{old_cpu:>9.2f}s {new_cpu:>5.2f}s {old_cpu / new_cpu:>5.1f}x", flush=True)


if __name__ == "__main__":
    main()
