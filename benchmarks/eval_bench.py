"""Harness throughput with the oracle agent on the bundled catalog, against an in-process replay baseline.

    python benchmarks/eval_bench.py [--transport http] [--concurrency 1,8,32] [--episodes 96] [--isolation both]

Measures, for each concurrency level, episodes/s and tool calls/s of `run_eval` (shared server per
environment, validators in the sandbox, results.jsonl fsync'd per episode); the per-episode cost of
replaying the same calls in process (EnvScaler's exec-the-class approach, validators exec'd in process)
as the baseline; and validator-sandbox throughput in checks/s. Server start-up is excluded. With
`--isolation both` (the default) every row is measured with the OS layers (servers and validators) off
and on, one after the other, so that the overhead shows side by side.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

# run from a checkout without installing; `--code DIR` measures another checkout's package (an older commit)
sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else str(Path(__file__).parent.parent))

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.harness.source import EpisodeSource
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.transcript import checks as transcript_checks
from envscaler_mcp.transcript.record import call_record, make_transcript

_HAS_LAZY_PLANS = hasattr(EnvPlan, "full")  # older checkouts (--against) loaded every scenario in full


def _launch(env_id: str, transport: str, isolation: bool, warm: bool, episode_process: str = "auto") -> Any:
    """launch_server with the warm switch and the episode-process choice when the measured code has them (older
    commits do not)."""
    from envscaler_mcp.launch import launch_server

    parameters = inspect.signature(launch_server).parameters
    if "episode_process" in parameters:
        return launch_server(env_id, transport=transport, isolation=isolation, warm=warm,  # type: ignore[arg-type]
                             episode_process=episode_process)  # type: ignore[arg-type]
    if "warm" in parameters:
        return launch_server(env_id, transport=transport, isolation=isolation, warm=warm)  # type: ignore[arg-type]
    return launch_server(env_id, transport=transport, isolation=isolation)  # type: ignore[arg-type]

sys.modules.setdefault("transcript_checks", transcript_checks)  # what transcript validators import
_CODE = str(Path(sys.modules["envscaler_mcp"].__file__ or ".").parent.parent)  # the checkout measured


def _eval_plans(env_ids: list[str]) -> list[EnvPlan]:
    """The plans `envscaler-mcp eval --env ...` makes: scenario headers, each line read in full when its
    episode starts."""
    from envscaler_mcp.harness.config import build_plan

    return build_plan(RunConfig(envs=env_ids, agent="oracle", progress=False))  # type: ignore[arg-type]


def _plans(env_ids: list[str], episodes: int) -> list[EnvPlan]:
    """Scenarios of every environment, repeated (as distinct trials) up to `episodes` in total."""
    plans = []
    for env_id in env_ids:
        sk = get_skeleton(env_id)
        scenarios = [s for s in scenarios_for(env_id) if s.reference_solution]
        plans.append(
            EnvPlan(
                env_id=env_id,
                env_info=EnvInfo(name=sk.name, introduction=sk.introduction, rules=sk.rules),
                scenarios=scenarios,
                hashes={"environment": sk.content_hash(), **scenario_hashes(scenarios)},
            )
        )
    return plans


def _class(source: str, class_name: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "bench_env"}
    exec(compile(source, "<environment>", "exec"), namespace)
    return namespace[class_name]


def _instance(source: str, class_name: str, state: dict[str, Any], cls: Any = None) -> Any:
    cls = cls or _class(source, class_name)
    try:
        obj = cls()
    except TypeError:
        obj = cls({})
    for key, value in copy.deepcopy(state).items():
        setattr(obj, key, value)
    return obj


def in_process_episode(class_source: str, class_name: str, scenario: Scenario, cls: Any = None) -> int:
    """EnvScaler-style episode: exec the class, replay the calls, read vars(), exec the validators."""
    env = _instance(class_source, class_name, scenario.initial_state, cls)
    calls = []
    for call in scenario.reference_solution:
        result = getattr(env, call.tool)(**call.arguments)
        calls.append(call_record(call.tool, call.arguments, json.dumps(result), not result.get("success", True)))
    final = copy.deepcopy({k: v for k, v in vars(env).items() if not k.startswith("_")})
    transcript = make_transcript(calls, scenario.reference_answer or "")
    passed = 0
    for item in scenario.checklist:
        scope: dict[str, Any] = {"initial_state": copy.deepcopy(scenario.initial_state)}
        exec(item.validator or "", scope)
        passed += scope["check_func"](transcript if item.kind == "transcript" else final) is True
    return len(scenario.reference_solution)


def _replay(cls: Any, scenario: Scenario) -> int:
    return in_process_episode("", "", scenario, cls)


def baseline(plans: list[EnvPlan], rounds: int) -> dict[str, float]:
    """Mean seconds per in-process episode: EnvScaler-style (exec the class source per episode, as its
    reset() does) and calls only (class compiled once; fresh instance, calls, state copy, validators)."""
    pairs = [(get_skeleton(p.env_id), s) for p in plans for s in map(p.full, p.headers())]
    n = rounds * len(pairs)
    t = time.perf_counter()
    for _ in range(rounds):
        for sk, s in pairs:
            in_process_episode(sk.class_source, sk.class_name, s)
    exec_each = (time.perf_counter() - t) / n
    classes = {sk.id: _class(sk.class_source, sk.class_name) for sk, _ in pairs}
    t = time.perf_counter()
    for _ in range(rounds):
        for sk, s in pairs:
            _replay(classes[sk.id], s)
    return {"exec_per_episode": exec_each, "calls_only": (time.perf_counter() - t) / n}


def _cpu_seconds(pids: list[int], *, own: bool = True) -> float:
    """CPU time of this process and of the children it has reaped (stdio servers) (`own`), and of `pids` (with
    the children they have reaped), in seconds."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) if own else ():
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for fields in _stats(pids):
        total += sum(int(x) for x in fields[11:15]) / ticks  # utime, stime, cutime, cstime
    return total


def _stats(pids: list[int]) -> list[list[str]]:
    """The fields of /proc/PID/stat after the command name, for each of `pids` still alive."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                found.append(f.read().rsplit(")", 1)[1].split())
        except OSError:
            continue
    return found


def _faults(pids: list[int], *, own: bool = True) -> int:
    """Page faults (minor and major) of this process and of the children it has reaped (`own`), and of `pids`
    (with the children they have reaped: a validator zygote's batch processes). Unlike CPU time, a count that
    the machine's load does not change: what a fork and the copy-on-write faults after it cost is mostly this."""
    total = 0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) if own else ():
        usage = resource.getrusage(who)
        total += usage.ru_minflt + usage.ru_majflt
    for fields in _stats(pids):
        total += sum(int(x) for x in fields[7:11])  # minflt, cminflt, majflt, cmajflt
    return total


def _fault_split(servers: list[int], validators: list[int]) -> dict[str, int]:
    """Page faults so far of the harness (this process and the children it reaped), the servers and the
    validator zygotes (with their batch processes)."""
    return {"harness": _faults([]), "servers": _faults(servers, own=False),
            "validators": _faults(validators, own=False)}


def _cpu_split(servers: list[int], validators: list[int]) -> dict[str, float]:
    """CPU seconds so far of the harness (this process and the children it reaped), the servers and the
    validator zygotes (with their batch processes)."""
    return {"harness": _cpu_seconds([]), "servers": _cpu_seconds(servers, own=False),
            "validators": _cpu_seconds(validators, own=False)}


def _tree_split(used: Any, episodes: int) -> dict[str, tuple[float, float]]:
    """(user, system) seconds per episode of each kind of process in a cpuacct.Usage."""
    split = {"harness": used.own()} | {k: (used.user[k], used.system[k]) for k in ("servers", "validators")}
    return {k: (u / 1e9 / episodes, s / 1e9 / episodes) for k, (u, s) in split.items()}


async def harness(
    plans: list[EnvPlan], transport: str, levels: list[int], episodes: int, isolation: bool = True,
    warm: bool = True, episode_process: str = "auto", tree: Any = None,
) -> list[dict[str, Any]]:
    """run_eval at each concurrency level on servers started once (`warm=False`: the old path, a protocol
    handshake and `tools/list` for every episode; `episode_process`: launch_server's). `tree`: a
    cpuacct.Tree this process runs in: each row then also has `tree_split`, the whole tree's CPU per episode
    by kind of process, (user, system) seconds."""
    per_env = max(1, episodes // max(1, len(plans)))
    rows = []
    async with AsyncExitStack() as stack:
        checker = await stack.enter_async_context(SandboxChecker(workers=int(os.environ.get("BENCH_VALIDATOR_WORKERS", "2")), isolation=isolation))
        servers: dict[str, EpisodeSource] = {}
        for plan in plans:
            servers[plan.env_id] = await stack.enter_async_context(
                _launch(plan.env_id, transport, isolation, warm, episode_process))

        @asynccontextmanager
        async def source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[EpisodeSource]:
            yield servers[plan.env_id]

        for level in levels:
            trials = max(1, -(-per_env // max(p.count() for p in plans)))
            config = RunConfig(
                envs=[p.env_id for p in plans],
                agent="oracle",
                trials=trials,
                concurrency=level,
                transport=transport,
                progress=False,
            )  # type: ignore[arg-type]
            server_pids = [p for p in (getattr(server, "pid", None) for server in servers.values()) if p]
            zygotes = checker._sandbox.worker_pids()  # zygotes: their own CPU and their batch processes'
            pids = server_pids + zygotes
            cpu_before = _cpu_seconds([p for p in pids if p])
            split_before = _cpu_split(server_pids, zygotes)
            faults_before = _fault_split(server_pids, zygotes)
            if tree is not None:
                tree.place("servers", server_pids)
                tree.place("validators", zygotes)
                tree_before = tree.read()
            with tempfile.TemporaryDirectory() as tmp:
                t = time.perf_counter()
                run_dir = await run_eval(
                    config,
                    Path(tmp) / "run",
                    plans=plans,
                    agent=Seat.oracle(),
                    checker=checker,
                    source_factory=source,
                )
                elapsed = time.perf_counter() - t
                cpu_used = _cpu_seconds([p for p in pids if p]) - cpu_before
                split = {k: v - split_before[k] for k, v in _cpu_split(server_pids, zygotes).items()}
                faults = {k: v - faults_before[k] for k, v in _fault_split(server_pids, zygotes).items()}
                tree_used = tree.read() - tree_before if tree is not None else None
                records = run_dir.read_results()
                summary = finish_run(run_dir.path)
            kinds: dict[str, float] = defaultdict(float)
            for r in records:
                for timing in r.timings:
                    kinds[timing.kind] += timing.seconds / len(records)
            kinds["other"] = sum(r.latency_s for r in records) / len(records) - sum(kinds.values())
            g = summary.overall
            calls = (g.mean_tool_calls or 0) * g.episodes
            rows.append(
                {
                    "concurrency": level,
                    "episodes": g.episodes,
                    "seconds": elapsed,
                    "episodes_per_s": g.episodes / elapsed,
                    "tool_calls_per_s": calls / elapsed,
                    "mean_latency_s": g.mean_latency_s,
                    "success_rate": g.success_rate,
                    "infra_errors": g.infra_errors,
                    "isolation": "on" if isolation else "off",
                    "path": "new" if warm else "old",
                    "load": os.getloadavg()[0],
                    "cpu_per_episode": cpu_used / g.episodes,
                    "cpu_split": {k: v / g.episodes for k, v in split.items()},
                    "fault_split": {k: v / g.episodes for k, v in faults.items()},
                    "calls_per_cpu_s": calls / cpu_used,
                    "breakdown": dict(kinds),
                    "tree_split": None if tree_used is None else _tree_split(tree_used, g.episodes),
                }
            )
    return rows


async def validator_throughput(plans: list[EnvPlan], rounds: int, workers: int, isolation: bool = True) -> float:
    """Checks per second through the sandbox, on the scenarios' reference final states."""
    jobs = []
    for plan in plans:
        sk = get_skeleton(plan.env_id)
        for s in map(plan.full, plan.headers()):
            env = _instance(sk.class_source, sk.class_name, s.initial_state)
            for call in s.reference_solution:
                getattr(env, call.tool)(**call.arguments)
            final = {k: v for k, v in vars(env).items() if not k.startswith("_")}
            jobs.append((s, final))
    n = 0
    async with SandboxChecker(workers=workers, isolation=isolation) as checker:
        t = time.perf_counter()
        for _ in range(rounds):
            async with anyio.create_task_group() as tg:
                for s, final in jobs:
                    tg.start_soon(checker.check, s.checklist, s.initial_state, final)
            n += sum(len(s.checklist) for s, _ in jobs)
        return n / (time.perf_counter() - t)


def _query_call(env_id: str) -> tuple[str, dict[str, Any]]:
    """The first query-tool call of a reference solution in `env_id` (a call that changes nothing)."""
    kinds = {t.name: t.kind for t in get_skeleton(env_id).tools}
    for s in scenarios_for(env_id):
        for call in s.reference_solution:
            if kinds.get(call.tool) == "query":
                return call.tool, call.arguments
    raise SystemExit(f"{env_id}: no query call in any reference solution")


async def calls_under_load(env_id: str, transport: str, episodes: int, calls: int, warm: bool,
                           think_s: float = 0.0) -> dict[str, Any]:
    """`episodes` concurrent episodes on one server, each listing the tools and making `calls` query calls:
    per-call latency, calls/s and calls per CPU second (this process + the server; stdio servers once reaped).
    With `think_s` each episode waits a random 0-2x `think_s` before opening and before each call, as an
    agent does while its model writes the next call (an open load of about episodes / think_s calls/s);
    without it every episode calls again as soon as it has its answer (a closed loop: the latency is then
    mostly the queue in front of the server)."""
    tool, arguments = _query_call(env_id)
    rng = random.Random(0)
    latencies: list[float] = []
    errors = 0
    async with _launch(env_id, transport, True, warm) as server:
        pid = getattr(server, "pid", None)

        async def one() -> None:
            nonlocal errors
            await anyio.sleep(rng.uniform(0, 2 * think_s))
            async with server.episode() as ep:
                await ep.list_tools()
                for _ in range(calls):
                    await anyio.sleep(rng.uniform(0, 2 * think_s))
                    t = time.perf_counter()
                    result = await ep.call_tool(tool, arguments)
                    latencies.append(time.perf_counter() - t)
                    errors += bool(result.is_error)

        cpu0 = _cpu_seconds([pid] if pid else [])
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(episodes):
                tg.start_soon(one)
        wall = time.perf_counter() - t0
        cpu = _cpu_seconds([pid] if pid else []) - cpu0
    if transport == "stdio":
        cpu = _cpu_seconds([]) - cpu0  # the servers have exited and been reaped by now
    latencies.sort()
    n = len(latencies)
    return {"transport": transport, "path": "new" if warm else "old", "episodes": episodes, "calls": n,
            "think_s": think_s,
            "errors": errors, "p50": latencies[n // 2], "p95": latencies[int(n * 0.95)], "calls_per_s": n / wall,
            "calls_per_cpu_s": n / cpu, "load": load}


def _load_rows(env_id: str, paths: list[bool], concurrent: int, calls: int, think_s: float) -> list[dict[str, Any]]:
    plan = [("pipe", concurrent, calls, think_s), ("http", concurrent, calls, think_s),
            ("pipe", concurrent, calls, 0.0), ("http", concurrent, calls, 0.0),
            ("pipe", 8, 50, 0.0), ("http", 8, 50, 0.0), ("memory", 8, 50, 0.0), ("stdio", 4, 50, 0.0)]
    from typing import get_args

    from envscaler_mcp.launch import Transport

    known = get_args(Transport)  # an older checkout measured with --code may not have the pipe
    return [anyio.run(calls_under_load, env_id, transport, episodes, n, warm, think)
            for transport, episodes, n, think in plan for warm in paths
            if transport in known and (warm or transport != "pipe")]  # the pipe has no old path


def load_section(env_id: str, paths: list[bool], concurrent: int, calls: int, think_s: float) -> list[dict[str, Any]]:
    """Print tool-call latency under load and calls per CPU second for each transport, old and new path."""
    rows = _load_rows(env_id, paths, concurrent, calls, think_s)
    print(f"\ntool calls ({env_id}, one server; the load generator on the same machine):\n")
    print("| transport | path | concurrent episodes | think time | calls | load | call p50 | call p95 | calls/s "
          "| calls per CPU s (client + server) | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['transport']} | {r['path']} | {r['episodes']} | 0-{2 * r['think_s']:g} s | {r['calls']} | "
              f"{r['load']:.1f} | "
              f"{1000 * r['p50']:.1f} ms | {1000 * r['p95']:.1f} ms | {r['calls_per_s']:.0f} | "
              f"{r['calls_per_cpu_s']:.0f} | {r['errors']} |")
    big = [r for r in rows if r["episodes"] == concurrent and r["transport"] in ("http", "pipe")]
    for r in big:
        print(f"{r['transport']}, {r['path']} path: tool-call p50 at {concurrent} concurrent episodes, think time "
              f"0-{2 * r['think_s']:g} s: {1000 * r['p50']:.1f} ms (goal <= 50 ms), load {r['load']:.1f}")
    return rows


def _side(args: argparse.Namespace, code: str, out: Path) -> dict[str, Any]:
    """One invocation of this script measuring `code`'s package (new path), with an empty cache folder of its
    own (stored references start empty); returns its rows."""
    import subprocess

    rows_file = out / "rows.json"
    cmd = [sys.executable, __file__, "--code", code, "--rows-json", str(rows_file), "--paths", "new",
           "--transport", args.against_transport if code == args.against and args.against_transport else args.transport,
           "--concurrency", args.concurrency, "--episodes", str(args.episodes),
           "--load-env", args.load_env, "--load-episodes", str(args.load_episodes),
           "--load-calls", str(args.load_calls), "--load-think", str(args.load_think), "--skip", "sandbox",
           *[a for k in args.skip for a in ("--skip", k)], *[a for e in args.env or [] for a in ("--env", e)]]
    env = {**os.environ, "ENVSCALER_MCP_CACHE_DIR": str(out / "cache")}
    with open(out / "output.txt", "w", encoding="utf-8") as log:
        status = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if status != 0:
        raise SystemExit(f"the measurement of {code} failed (exit {status}); its output: {out / 'output.txt'}")
    return dict(json.loads(rows_file.read_text(encoding="utf-8")))


def _medians(sides: dict[str, list[dict[str, Any]]]) -> None:
    """Each side's medians over every round's passes after the first (references stored): the machine drifts
    between runs, so one row proves little."""
    import statistics

    print()
    for label, runs in sides.items():
        rows = [(r, run["baseline"]["exec_per_episode"]) for run in runs for r in run["harness"][1:]]
        if not rows:
            continue
        ratios = [r["episodes_per_s"] * base for r, base in rows]
        parts = {k: statistics.median(1000 * r["cpu_split"][k] for r, _ in rows)
                 for k in rows[0][0].get("cpu_split", {}) if all("cpu_split" in r for r, _ in rows)}
        print(f"{label}, {len(rows)} rows with stored references: median {statistics.median(ratios):.2f}x the "
              f"in-process baseline (lowest {min(ratios):.2f}x, {sum(x < 1.5 for x in ratios)} below 1.5x); CPU "
              f"per episode {statistics.median(1000 * r['cpu_per_episode'] for r, _ in rows):.1f} ms ("
              + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()) + ")")


def compare(args: argparse.Namespace) -> None:
    """`--against OLD`: the same measurements of the older checkout and of this one, alternated (`--repeat`
    rounds) so that both see the same machine, printed side by side."""
    sides: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    tmp = tempfile.mkdtemp(prefix="eval-bench-")  # kept: each side's full output is in <side>/output.txt
    print(f"outputs in {tmp}", flush=True)
    for n in range(args.repeat):
        for label, code in (("before", args.against), ("after", _CODE)):
            out = Path(tmp) / f"{label}-{n}"
            out.mkdir()
            sides[label].append(_side(args, code, out))
            print(f"round {n + 1}, {label} ({code}) done, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nbefore: {args.against}; after: {_CODE}\n")
    if "harness" not in args.skip:
        print("| round | pass | code | concurrency | load | episodes | episodes/s | CPU/episode "
              "| tool calls per CPU s | success |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for n in range(args.repeat):
            for label in ("before", "after"):
                for k, r in enumerate(sides[label][n]["harness"]):
                    print(f"| {n + 1} | {k + 1} | {label} | {r['concurrency']} | {r['load']:.1f} | {r['episodes']} | "
                          f"{r['episodes_per_s']:.1f} | {1000 * r['cpu_per_episode']:.1f} ms | "
                          f"{r['calls_per_cpu_s']:.0f} | {100 * (r['success_rate'] or 0):.0f}% |")
        for n in range(args.repeat):
            for k, (old, new) in enumerate(zip(sides["before"][n]["harness"], sides["after"][n]["harness"],
                                               strict=True)):
                base = sides["after"][n]["baseline"]["exec_per_episode"]
                print(f"round {n + 1}, pass {k + 1} (concurrency {new['concurrency']}): "
                      f"{old['cpu_per_episode'] / new['cpu_per_episode']:.2f}x less CPU per episode, "
                      f"{new['calls_per_cpu_s'] / old['calls_per_cpu_s']:.2f}x tool calls per CPU s; "
                      f"after: {new['episodes_per_s'] * base:.2f}x the in-process baseline's episodes/s "
                      f"(goal >= 1.5x), CPU per episode {new['cpu_per_episode'] / base:.2f}x the baseline's time")
        _medians(sides)
    if "load" not in args.skip:
        print("\n| round | transport | concurrent episodes | think time | code | load | call p50 | call p95 "
              "| calls/s | calls per CPU s | errors |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        def key(r: dict[str, Any]) -> tuple[Any, ...]:
            return r["transport"], r["episodes"], r["think_s"], r["path"]

        for n in range(args.repeat):
            before = {key(r): r for r in sides["before"][n]["load"]}
            for after in sides["after"][n]["load"]:  # rows of a transport the older code lacks: after only
                for label, r in (("before", before.get(key(after))), ("after", after)):
                    if r is None:
                        continue
                    print(f"| {n + 1} | {r['transport']} | {r['episodes']} | 0-{2 * r['think_s']:g} s | {label} | "
                          f"{r['load']:.1f} | {1000 * r['p50']:.1f} ms | {1000 * r['p95']:.1f} ms | "
                          f"{r['calls_per_s']:.0f} | {r['calls_per_cpu_s']:.0f} | {r['errors']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", default="http", choices=["http", "pipe", "memory", "stdio"])
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--episodes", type=int, default=96, help="episodes per concurrency level (about)")
    parser.add_argument("--env", action="append", help="environment ids (default: the whole catalog)")
    parser.add_argument("--isolation", default="on", choices=["both", "on", "off"],
                        help="the OS layers around servers and validators (both: each row off, then on)")
    parser.add_argument("--paths", default="both", choices=["both", "old", "new"],
                        help="old: handshake and tools/list per episode; new: both learnt once per server")
    parser.add_argument("--code", default=_CODE, help="checkout whose envscaler_mcp is measured (default: this one)")
    parser.add_argument("--load-env", default="ecommerce_orders",
                        help="environment of the tool-call load section (one server, many concurrent episodes)")
    parser.add_argument("--load-episodes", type=int, default=500, help="concurrent HTTP episodes on one server")
    parser.add_argument("--load-calls", type=int, default=4, help="query calls per episode under load")
    parser.add_argument("--load-think", type=float, default=5.0,
                        help="mean seconds an episode waits before each call in the first load row")
    parser.add_argument("--skip", action="append", default=[], choices=["harness", "load", "sandbox"],
                        help="leave a section out")
    parser.add_argument("--against", default=None, metavar="OLD_CHECKOUT",
                        help="measure an older checkout (e.g. a `git archive` export) and this one, alternated")
    parser.add_argument("--repeat", type=int, default=2, help="with --against: rounds of before/after")
    parser.add_argument("--against-transport", default=None,
                        help="with --against: the older checkout's transport (default: --transport)")
    parser.add_argument("--rows-json", default=None, help=argparse.SUPPRESS)  # used by --against
    args = parser.parse_args()
    if args.against:
        compare(args)
        return
    modes = {"both": [False, True], "on": [True], "off": [False]}[args.isolation]
    paths = {"both": [False, True], "old": [False], "new": [True]}[args.paths]
    env_ids = args.env or list_env_ids()
    plans = _plans(env_ids, args.episodes)
    # The harness rows get plans as `eval` builds them (each episode reads its scenario's line when it starts);
    # the baseline and the sandbox rows the scenarios in full.
    eval_plans = _eval_plans(env_ids) if _HAS_LAZY_PLANS else plans
    levels = [int(x) for x in args.concurrency.split(",")]
    print(
        f"catalog: {', '.join(env_ids)}; {sum(p.count() for p in plans)} scenarios; "
        f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}"
    )
    base = baseline(plans, rounds=3)
    print(
        f"in-process replay baseline: {1000 * base['exec_per_episode']:.2f} ms/episode EnvScaler-style (exec "
        f"the class per episode), {1000 * base['calls_only']:.2f} ms/episode calls only"
    )
    load_rows: list[dict[str, Any]] = []
    if "load" not in args.skip:
        load_rows = load_section(args.load_env, paths, args.load_episodes, args.load_calls, args.load_think)
    if "harness" in args.skip:
        if args.rows_json:
            Path(args.rows_json).write_text(json.dumps({"baseline": base, "load": load_rows, "harness": []}))
        return
    rows = [row for level in levels for mode in modes for warm in paths
            for row in anyio.run(harness, eval_plans, args.transport, [level], args.episodes, mode, warm)]
    print(
        "\n| transport | OS layers | path | concurrency | load | episodes | episodes/s | tool calls/s | mean latency "
        "| wall/episode | CPU/episode | success | infra |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {args.transport} | {r['isolation']} | {r['path']} | {r['concurrency']} | {r['load']:.1f} | "
            f"{r['episodes']} | "
            f"{r['episodes_per_s']:.1f} | {r['tool_calls_per_s']:.1f} | {1000 * (r['mean_latency_s'] or 0):.1f} ms | "
            f"{1000 / r['episodes_per_s']:.1f} ms | {1000 * r['cpu_per_episode']:.1f} ms | "
            f"{100 * (r['success_rate'] or 0):.0f}% | "
            f"{r['infra_errors']} |"
        )
    for r in rows:
        if r.get("cpu_split"):
            print(f"concurrency {r['concurrency']}, {r['path']} path: CPU per episode "
                  + ", ".join(f"{k} {1000 * v:.1f} ms" for k, v in r["cpu_split"].items()))
    base_rate = 1 / base["exec_per_episode"]
    for r in rows:
        print(f"concurrency {r['concurrency']}, OS layers {r['isolation']}, {r['path']} path: "
              f"{r['episodes_per_s'] / base_rate:.2f}x the in-process baseline's episodes/s (goal >= 1.5x at 8)")
    if len(paths) == 2:
        for old, new in zip(rows[::2], rows[1::2], strict=True):
            print(f"concurrency {new['concurrency']}, OS layers {new['isolation']}: new/old path "
                  f"{new['episodes_per_s'] / old['episodes_per_s']:.2f}x episodes/s, "
                  f"{old['cpu_per_episode'] / new['cpu_per_episode']:.2f}x less CPU per episode "
                  f"(load {old['load']:.1f} / {new['load']:.1f})")
    if len(modes) == 2 and len(paths) == 1:
        for off, on in zip(rows[::2], rows[1::2], strict=True):
            print(f"concurrency {on['concurrency']}: the OS layers cost "
                  f"{100 * (off['episodes_per_s'] / on['episodes_per_s'] - 1):+.1f} % wall time and "
                  f"{100 * (on['cpu_per_episode'] / off['cpu_per_episode'] - 1):+.1f} % CPU time per episode "
                  "(harness, servers and validators)")
    if args.rows_json:
        Path(args.rows_json).write_text(json.dumps({"baseline": base, "load": load_rows, "harness": rows}))
    first = rows[0]
    parts = ", ".join(f"{k} {1000 * v:.1f} ms" for k, v in first["breakdown"].items())
    print(f"\nwhere an episode's time goes at concurrency {first['concurrency']}: {parts}")
    if "sandbox" in args.skip:
        return
    for workers in (1, 2):
        for mode in modes:
            rate = anyio.run(validator_throughput, plans, 5, workers, mode)
            print(f"validator sandbox, {workers} worker(s), OS layers {'on' if mode else 'off'}: {rate:.0f} checks/s")


if __name__ == "__main__":
    main()
