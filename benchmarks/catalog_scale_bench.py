"""Catalogs at scale: N environments x 10 scenarios, every command timed, its memory and disk measured.

The catalog is made from the bundled environments that have at least 10 scenarios (and, with --from HOME, the
environments of an imported data home): environment i is a copy of base i % bases renamed to
`<base>_s<i>` with the base's first 10 scenarios, each scenario's initial state varied (one record of its
largest collection copied under a new key, so no two environments share a state, a rendered server or a
state file by accident), written in EnvScaler's format (env_metadata.json, scenario_metadata.json). Then,
each command in its own process (niced with --nice), against the imported home:

* `import envscaler` (EnvScaler's files carry no reference solutions: the script then gives each imported
  scenario its original's reference and wrong solutions, untimed, as eval_scale_bench.py does);
* `list`, `show <one env>`;
* `render --all` (into the home's generated_servers/);
* `scenarios check` (every environment of the home: the gate);
* `eval --all --agent oracle` (a private render cache, ENVSCALER_MCP_CACHE).

* `import envscaler --trajectories` (only when asked for by --only: a rollout record of each scenario's
  reference solution, replayed and attached, into a home of its own).

For each: wall time, CPU time (user + system of the process and everything it waited for; with root and a
cgroup-v1 cpuacct controller also the whole tree's, benchmarks/cpuacct.py, and per scenario or episode), memory
(tree_memory.py: the peak PSS summed over the process tree, what the command costs the machine; the peak
RSS summed, which counts pages shared by forked processes once per process; the command's own peak RSS; the
largest peak RSS of any one process and which), the most processes alive at once in the tree (servers
started on demand, not 1,000 at once), and disk (the home, the render cache). Rows go to --results (JSON lines, one per command and N) and the
table to stdout; --svg writes a log-log plot of wall time and peak memory against N from every row in
--results.

--large K makes instead one environment with K scenarios whose states are grown to --state-kb (records of
the base copied under new keys), to measure the memory bound of check, render, eval and
`import --trajectories` against the largest scenario line.

Usage: python benchmarks/catalog_scale_bench.py [--envs 10,100,1000] [--per-env 10] [--only import,list,...]
       [--work DIR [--keep] [--reuse]] [--results FILE] [--svg FILE] [--nice 10] [--large K --state-kb 1300]
       [--workers 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cpuacct import Tree
from scale_plot import write_svg
from tree_memory import TreeSampler

from envscaler_mcp.catalog.store import (
    get_skeleton,
    list_env_ids,
    load_scenarios,
    save_scenarios,
    scenarios_for,
)
from envscaler_mcp.interop.to_envscaler import export_envscaler
from envscaler_mcp.launch.server_zygote import ZYGOTE_ENV
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

COMMANDS = ("import", "list", "show", "render", "check", "eval", "trajectories")


def _tables(state: dict[str, Any]) -> list[str]:
    """Collections of records (dicts of dicts), largest first."""
    tables = [k for k, v in state.items() if isinstance(v, dict) and v and all(isinstance(r, dict) for r in v.values())]
    return sorted(tables, key=lambda k: -len(state[k]))


def varied(state: dict[str, Any], tag: str) -> dict[str, Any]:
    """`state` with the last record of its largest collection copied under a new key (its own id field too)."""
    tables = _tables(state)
    if not tables:
        return {**state, f"_{tag}": tag}  # no collection: the schema decides whether this is accepted
    table = tables[0]
    key, record = list(state[table].items())[-1]
    copy = {f: (f"{key}-{tag}" if v == key else v) for f, v in record.items()}
    return {**state, table: {**state[table], f"{key}-{tag}": copy}}


def grown(state: dict[str, Any], target: int) -> dict[str, Any]:
    """`state` with its collections grown by renamed copies of their records to about `target` bytes."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
    tables, n = _tables(state), 0
    while tables and len(json.dumps(out)) < target:
        n += 1
        for table in tables:
            for key, record in state[table].items():
                out[table][f"{key}_x{n}"] = dict(record)
    return out


def bases(extra_home: Path | None, per_env: int) -> list[tuple[EnvSkeleton, list[Scenario]]]:
    """Bundled (and imported) environments with at least `per_env` scenarios, each with its first `per_env`."""
    found = []
    roots = [(None, None)] + ([(extra_home / "environments", extra_home / "scenarios")] if extra_home else [])
    for env_root, scen_root in roots:
        for env in list_env_ids(env_root):
            skeleton = get_skeleton(env, env_root)
            scenarios = scenarios_for(skeleton.id, scen_root)
            if len(scenarios) >= per_env and all(s.has_reference() for s in scenarios[:per_env]):
                found.append((skeleton, scenarios[:per_env]))
    if not found:
        raise SystemExit(f"no environment with {per_env} scenarios with reference solutions")
    return found


def rollout(item: dict[str, Any], base: Scenario) -> dict[str, Any]:
    """A rollout record in EnvScaler's shape for scenario `item`: its task_info (the scenario item, initial state
    included), then one step per call of the base's reference solution, with no recorded result (the replay
    compares none)."""
    steps: list[dict[str, Any]] = [{"step": 0, "observation": item["task"]}]
    steps += [{"step": n, "action": {"name": call.tool, "arguments": call.arguments},
               "observation": {"type": "tool", "content": None}} for n, call in enumerate(base.reference_solution, 1)]
    return {"task_info": item, "trajectory": steps}


def make_catalog(n: int, per_env: int, folder: Path, extra_home: Path | None, state_kb: int = 0,
                 large: int = 0, trajectories: bool = False) -> tuple[Path, Path, dict[str, dict[str, Any]], int]:
    """Write the set in EnvScaler's format; return its two paths, by task_id what EnvScaler's files cannot carry
    (reference and wrong solutions), and the bytes of its largest scenario item. Each base is exported once;
    copies change its items' ids and states. With `trajectories`, also `trajectories.jsonl`: a rollout record
    of each scenario's reference solution."""
    found = bases(extra_home, per_env if not large else 1)
    exported = [export_envscaler([(skeleton, scenarios)]) for skeleton, scenarios in found]
    refs: dict[str, dict[str, Any]] = {}
    envs_path, scen_path = folder / "env_metadata.json", folder / "scenario_metadata.json"
    env_items: dict[str, Any] = {}
    largest = 0
    rollouts = (folder / "trajectories.jsonl").open("w", encoding="utf-8") if trajectories else None
    with scen_path.open("w", encoding="utf-8") as out:
        out.write("[")
        first = True
        for i in range(1 if large else n):
            (skeleton, scenarios), (items, scen_items) = found[i % len(found)], exported[i % len(found)]
            new_id = f"{skeleton.id}_s{i}"
            env_items[new_id] = {**next(iter(items.values())), "env_id": new_id}
            for k in range(large or per_env):
                base, item = scenarios[k % len(scenarios)], scen_items[k % len(scenarios)]
                state = grown(base.initial_state, state_kb * 1000) if state_kb else base.initial_state
                task = base.task if k < len(scenarios) else f"[{k}] {base.task}"
                copy = {**item, "env_id": new_id, "task_id": f"{new_id}-{k}", "task": task,
                        "init_config": varied(state, f"v{i}x{k}")}
                refs[f"{new_id}-{k}"] = {"reference_solution": base.reference_solution,
                                         "wrong_solutions": base.wrong_solutions}
                line = json.dumps(copy)
                largest = max(largest, len(line))
                out.write(("" if first else ",") + line)
                first = False
                if rollouts:
                    rollouts.write(json.dumps(rollout(copy, base)) + "\n")
        out.write("]")
    if rollouts:
        rollouts.close()
    envs_path.write_text(json.dumps(env_items), encoding="utf-8")
    return envs_path, scen_path, refs, largest


def attach_references(home: Path, refs: dict[str, dict[str, Any]]) -> int:
    """Give each imported scenario its original's reference and wrong solutions; return how many got them."""
    attached = 0
    for path in sorted((home / "scenarios").glob("*.jsonl")):
        updated = []
        for s in load_scenarios(path):
            ref = refs.get(s.provenance.source_id or "")
            if ref is not None:
                s = s.model_copy(update=ref)
                attached += 1
            updated.append(s)
        save_scenarios(updated, path, index=True)
    return attached


def run_cli(args: list[str], env: dict[str, str], nice: int, out: Path | None = None) -> dict[str, Any]:
    """Run one CLI command; its wall and CPU seconds, exit code, peak memory and most processes."""
    tree = Tree.create("catalog-scale")  # the whole tree's CPU (cpuacct), zygotes' children and namespaces' too
    start = time.perf_counter()
    stdout = out.open("wb") if out else subprocess.DEVNULL
    proc = subprocess.Popen(["nice", "-n", str(nice), sys.executable, "-m", "envscaler_mcp", *args],
                            stdout=stdout, stderr=subprocess.PIPE, env=env,
                            preexec_fn=tree.enter if tree else None)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    if out:
        stdout.close()  # type: ignore[union-attr]
    tree_cpu: dict[str, float] = {}
    if tree:
        tree.settle()
        used = tree.read()
        tree_cpu = {"tree_cpu_s": round((used.user[""] + used.system[""]) / 1e9, 2)}
        tree.remove()
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2), **tree_cpu,
            "exit": os.waitstatus_to_exitcode(status), **sampler.measures(),
            "stderr_tail": err[-600:]}


def size_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1) if path.exists() else 0.0


def gate_passed(text: str) -> str:
    line = next((ln for ln in reversed(text.splitlines()) if "scenarios passed the gate" in ln), "")
    return line.split(" scenarios")[0].strip()


def attached_line(text: str) -> str:
    """'N attached, M not verified' from `import --trajectories`'s output."""
    found = re.search(r"(\d+) attached \(replay reproduced every call\), (\d+) not verified", text)
    return f"{found.group(1)} attached, {found.group(2)} not verified" if found else "no attach line"


def eval_summary(run: Path) -> str:
    path = run / "results.jsonl"
    if not path.is_file():
        return "no results"
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    good = sum(1 for r in rows if r.get("success"))
    infra = sum(1 for r in rows if r.get("infra_error"))
    return f"{good}/{len(rows)} succeeded, {infra} infra"


def measure(n: int, args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    """Make the catalog of `n` environments and run the commands; one row per command."""
    folder = work / (f"large{args.large}x{args.state_kb}kb" if args.large else f"n{n}")
    reused = args.reuse and (folder / "home" / "environments").is_dir()
    if not reused:  # --reuse: the set is made again (the same bytes: its references are needed), not imported
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    wanted = args.only.split(",") if args.only else list(COMMANDS)
    envs_path, scen_path, refs, largest = make_catalog(n, args.per_env, folder, args.from_home, args.state_kb,
                                                       args.large, trajectories="trajectories" in wanted)
    print(f"N={n}: set made in {time.perf_counter() - start:.1f} s, {scen_path.stat().st_size / 1e6:.1f} MB, "
          f"{len(refs)} scenarios, largest item {largest / 1e6:.2f} MB", flush=True)
    home, cache, run = folder / "home", folder / "cache", folder / "run"
    env = {**os.environ, "COLUMNS": "200", "ENVSCALER_MCP_CACHE": str(cache)}
    env.pop("ENVSCALER_MCP_HOME", None)
    one_env = f"{bases(args.from_home, args.per_env if not args.large else 1)[0][0].id}_s0"
    steps: list[tuple[str, list[str]]] = [
        ("import", ["import", "envscaler", "--envs", str(envs_path), "--scenarios", str(scen_path), "--out", str(home)]),
        ("list", ["list", "--home", str(home)]),
        ("show", ["show", one_env, "--home", str(home)]),
        ("render", ["render", "--all", "--home", str(home)]),
        ("check", ["scenarios", "check", "--home", str(home)]),
        ("eval", ["eval", "--all", "--agent", "oracle", "--home", str(home), "--out", str(run), "--no-progress"]),
        ("trajectories", ["import", "envscaler", "--envs", str(envs_path), "--scenarios", str(scen_path),
                          "--trajectories", str(folder / "trajectories.jsonl"), "--transport", "pipe",
                          "--out", str(folder / "home_t")]),
    ]
    if args.zygote == "both":  # check and eval with servers started fresh, then forked from the server zygote
        steps = [(f"{name}{mode}", cmd) for name, cmd in steps
                 for mode in ((" fresh", " zygote") if name in ("check", "eval") else ("",))]
    if args.workers:  # check and eval once per --workers value, side by side
        steps = [(f"{label} workers={w}" if label.split()[0] in ("check", "eval") else label,
                  [*cmd, "--workers", w] if label.split()[0] in ("check", "eval") else cmd)
                 for label, cmd in steps for w in (args.workers.split(",") if label.split()[0] in ("check", "eval")
                                                   else [""])]
    rows = []
    for label, cmd in steps:
        name, _, mode = label.partition(" ")
        mode = mode.split(" workers=")[0]
        if name not in wanted and name != "import":
            continue
        if name == "import" and reused:
            if {"check", "eval"} & set(wanted):
                print(f"  kept home: {attach_references(home, refs)} references attached", flush=True)
            continue
        env[ZYGOTE_ENV] = "off" if (mode or args.zygote) in ("fresh", "off") else "on"
        if name == "eval":
            shutil.rmtree(run, ignore_errors=True)
        out = folder / f"{name}.out"
        row = {"n": n, "scenarios": len(refs), "command": label, "largest_line_mb": round(largest / 1e6, 2),
               **run_cli(cmd, env, args.nice, out)}
        if name == "import":  # only check and eval need the references (attaching rewrites every scenario)
            row["attached"] = attach_references(home, refs) if {"check", "eval"} & set(wanted) else 0
        text = out.read_text(encoding="utf-8", errors="replace")
        row["note"] = (gate_passed(text) + " passed" if name == "check" else eval_summary(run) if name == "eval"
                       else f"{row['attached']} references attached" if name == "import"
                       else attached_line(text) if name == "trajectories" else "")
        if name in ("check", "eval"):
            row["per_s"] = round(len(refs) / row["wall_s"], 1)
            row["per_cpu_s"] = round(len(refs) / max(row["cpu_s"], 0.01), 1)  # what the load does not change
            if "tree_cpu_s" in row:  # CPU ms per scenario or episode, the whole tree
                row["tree_cpu_ms_each"] = round(1000 * row["tree_cpu_s"] / len(refs), 1)
        if name == "eval":
            row["run_mb"] = size_mb(run)
        row["home_mb"], row["cache_mb"] = size_mb(folder / "home_t" if name == "trajectories" else home), size_mb(cache)
        row["load"] = round(os.getloadavg()[0], 1)
        rows.append(row)
        print(_line(row), flush=True)
        if row["exit"] not in (0, 1):
            print(f"  {name} exited {row['exit']}: {row['stderr_tail']}", flush=True)
    if not (args.keep or reused):  # a --reuse run leaves the kept catalog as it found it
        shutil.rmtree(folder, ignore_errors=True)
    return rows


HEADER = ("| N envs | command | wall | CPU | peak PSS (tree) | peak RSS summed (tree) | peak RSS of the command | "
          "largest peak RSS of one process (which) | most processes | home | render cache | rate, outcome | load | "
          "exit |")


def _line(row: dict[str, Any]) -> str:
    rate = f" | {row['per_s']}/s ({row.get('per_cpu_s', '?')} per CPU s)" if "per_s" in row else " |"
    tree = (f" (tree {row['tree_cpu_s']} s" + (f", {row['tree_cpu_ms_each']} ms each)" if "tree_cpu_ms_each" in row
                                               else ")")) if "tree_cpu_s" in row else ""
    return (f"| {row['n']} | {row['command']} | {row['wall_s']} s | {row['cpu_s']} s{tree} | {row['peak_tree_pss_mb']} MB "
            f"| {row['peak_tree_mb']} MB | {row['peak_main_mb']} MB | {row['peak_largest_mb']} MB ({row['largest']}) "
            f"| {row['most_processes']} | {row['home_mb']} MB | {row['cache_mb']} MB"
            f"{rate} {row['note']} | {row['load']} | {row['exit']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="10,100", help="Comma list of catalog sizes (environments).")
    parser.add_argument("--per-env", type=int, default=10)
    parser.add_argument("--only", default="", help=f"Comma list of {', '.join(COMMANDS)} (import always runs).")
    parser.add_argument("--from", dest="from_home", type=Path, default=None, help="Also copy this home's envs.")
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep each catalog and its home in --work.")
    parser.add_argument("--reuse", action="store_true", help="Run the commands on the home a --keep run left in "
                        "--work (the set made again for its references; no import row), and keep it.")
    parser.add_argument("--results", type=Path, default=None, help="Append rows here (JSON lines).")
    parser.add_argument("--svg", type=Path, default=None, help="Write the plot of every row in --results here.")
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--zygote", choices=["on", "off", "both"], default="on",
                        help="Start servers forked from the server zygote (on), fresh (off), or run check and eval "
                             "both ways (both).")
    parser.add_argument("--workers", default="", help="Run check and eval once per value of this comma list of "
                        "--workers values (e.g. 1,auto), side by side (default: the commands' own default).")
    parser.add_argument("--large", type=int, default=0, help="One environment with this many large scenarios.")
    parser.add_argument("--state-kb", type=int, default=0, help="Grow each state to this size (with --large).")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="catalog-scale-"))
    print(HEADER)
    print("|---" * HEADER.count(" | ") + "|---|")
    sizes = [1] if args.large else [int(x) for x in args.envs.split(",") if x]
    for n in sizes:
        rows = measure(n, args, work)
        if args.results:
            with args.results.open("a", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row) + "\n")
    if args.svg and args.results:
        all_rows = [json.loads(line) for line in args.results.open(encoding="utf-8") if line.strip()]
        write_svg([r for r in all_rows if r["scenarios"] == r["n"] * args.per_env], args.svg)
        print(f"plot: {args.svg}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
