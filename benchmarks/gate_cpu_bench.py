"""CPU per scenario of `scenarios check`, two (or more) trees of the code side by side on one data home.

Each run is the command in a process of its own (`python -c` that calls the CLI in-process), the trees taking
turns run by run so that the machine's load weighs on all alike. Reported per scenario: the CPU time of the
gate's own process (getrusage SELF, its start-up included) and of everything it waited for (the servers, the
server zygote and the validator sandbox: getrusage CHILDREN), and the wall time. Run as root where the
cgroup-v1 cpuacct controller is mounted, each run is also charged to a cpuacct group of its own: the whole
tree's CPU (user and system), forks reaped by namespace PID 1s included, which getrusage misses. Each run's `--json` output is
kept, and every tree's verdicts (each scenario's pass/fail and every step's status and reasons) are compared
with the first tree's: the script says which scenarios differ.

Usage (a home made by `catalog_scale_bench.py --envs 10 --only check --work DIR --keep`):

    nice -n 10 python benchmarks/gate_cpu_bench.py --home DIR/n10/home --cache DIR/n10/cache \\
        --tree before=/tmp/main_tree --tree after=. --runs 3 [--out /tmp/gate_runs] [-- --servers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_CHILD = """
import atexit, json, resource, sys

usage_path = sys.argv.pop(1)
code = [0]


def report():  # registered first, so it runs last: after the server zygote has been closed and reaped
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(usage_path, "w") as out:
        json.dump({"self": s.ru_utime + s.ru_stime, "children": c.ru_utime + c.ru_stime, "exit": code[0]}, out)


atexit.register(report)
from envscaler_mcp.cli import main
try:
    main()
except SystemExit as exc:
    code[0] = exc.code if isinstance(exc.code, int) else 1
"""


def verdicts(text: str) -> dict[str, Any]:
    """{env/scenario: (passed, [(step, status, reasons)])} of a `scenarios check --json` output."""
    out: dict[str, Any] = {}
    for report in json.loads(text):
        steps = [(s["name"], s["status"], s.get("reasons", [])) for s in report["steps"]]
        out[f"{report['env_id']}/{report['scenario_id']}"] = (all(s[1] != "fail" for s in steps), steps)
    return out


_CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def cgroup_usable() -> bool:
    """The cgroup-v1 cpuacct controller is mounted and this process may make groups in it (root)."""
    return (_CPUACCT / "cpuacct.usage").exists() and os.access(_CPUACCT, os.W_OK)


def in_cgroup(cmd: list[str], name: str) -> tuple[list[str], Path]:
    """`cmd` run in a cpuacct group of its own: its whole process tree is charged there (forks, namespaced
    children and the kernel's time for them included, which getrusage misses)."""
    group = _CPUACCT / name
    group.mkdir(exist_ok=True)
    return ["bash", "-c", f'echo $$ > {group}/tasks && exec "$@"', "cgroup", *cmd], group


def cgroup_cpu(group: Path) -> dict[str, float]:
    """Seconds of CPU of everything that ran in `group` (total, user, system), then the group removed."""
    ticks = os.sysconf("SC_CLK_TCK")
    stat = dict(line.split() for line in (group / "cpuacct.stat").read_text().splitlines())
    out = {"tree": int((group / "cpuacct.usage").read_text()) / 1e9, "tree_user": int(stat["user"]) / ticks,
           "tree_system": int(stat["system"]) / ticks}
    group.rmdir()
    return out


def run_once(tree: Path, home: Path, cache: Path, extra: list[str], out: Path, cgroup: bool) -> dict[str, float]:
    usage = out.with_suffix(".usage.json")
    env = {**os.environ, "PYTHONPATH": str(tree), "ENVSCALER_MCP_CACHE": str(cache), "COLUMNS": "200"}
    env.pop("ENVSCALER_MCP_HOME", None)
    cmd = [sys.executable, "-c", _CHILD, str(usage), "scenarios", "check", "--home", str(home), "--json", *extra]
    group = None
    if cgroup:
        cmd, group = in_cgroup(cmd, f"gate_cpu_bench_{os.getpid()}_{out.stem.replace('.', '_')}")
    start = time.perf_counter()
    with out.open("wb") as stdout:
        subprocess.run(cmd, env=env, stdout=stdout, stderr=subprocess.DEVNULL, check=False, cwd=tree)
    wall = time.perf_counter() - start
    measured = json.loads(usage.read_text())
    row = {"wall": wall, "self": measured["self"], "children": measured["children"], "exit": measured["exit"]}
    return {**row, **(cgroup_cpu(group) if group is not None else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="The render cache (ENVSCALER_MCP_CACHE).")
    parser.add_argument("--tree", action="append", required=True, help="LABEL=PATH of a source tree.")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("/tmp/gate_cpu_runs"))
    parser.add_argument("extra", nargs="*", help="More options for `scenarios check` (after --).")
    args = parser.parse_args()
    trees = [(label, Path(path).resolve()) for label, _, path in (t.partition("=") for t in args.tree)]
    args.out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict[str, float]]] = {label: [] for label, _ in trees}
    first: dict[str, Any] | None = None
    n = 0
    cgroup = cgroup_usable()
    if not cgroup:
        print("note: no writable cgroup-v1 cpuacct controller (root and /sys/fs/cgroup/cpuacct needed): only "
              "getrusage's columns, which miss processes reaped by namespace PID 1s", flush=True)
    for run in range(args.runs):
        for label, tree in trees:
            out = args.out / f"{label}.{run}.json"
            row = run_once(tree, args.home, args.cache, args.extra, out, cgroup)
            got = verdicts(out.read_text())
            n = len(got)
            if first is None:
                first = got
            differ = sorted(k for k in first.keys() | got.keys() if first.get(k) != got.get(k))
            rows[label].append(row)
            print(f"run {run} {label}: {n} scenarios, exit {row['exit']}, self {row['self']:.2f} s, children "
                  f"{row['children']:.2f} s, wall {row['wall']:.1f} s, load {os.getloadavg()[0]:.1f}; "
                  f"verdicts differing from the first run: {len(differ)} {differ[:5]}", flush=True)
    print("\n| per scenario | " + " | ".join(label for label, _ in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for key, name in (("self", "the gate's process"), ("children", "servers and validators")):
        cells = [" / ".join(f"{1000 * r[key] / n:.0f}" for r in rows[label]) + " ms" for label, _ in trees]
        print(f"| {name} | " + " | ".join(cells) + " |")
    cells = [" / ".join(f"{1000 * (r['self'] + r['children']) / n:.0f}" for r in rows[label]) + " ms"
             for label, _ in trees]
    print("| in all | " + " | ".join(cells) + " |")
    if cgroup:
        for key, name in (("tree", "the whole tree (cpuacct)"), ("tree_user", "of which user"),
                          ("tree_system", "of which system")):
            cells = [" / ".join(f"{1000 * r[key] / n:.0f}" for r in rows[label]) + " ms" for label, _ in trees]
            print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
