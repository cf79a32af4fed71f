"""Speed of generated MCP servers: start, round trips, episodes, memory, large states, concurrency.

    python benchmarks/server_bench.py [--env ecommerce_orders] [--calls 300] [--episodes 200]
    python benchmarks/server_bench.py --compare OTHER_SERVER_DIR [--rounds 6]

`--compare` measures only the server's CPU per call (its whole process tree, /proc) of this checkout's
server against another rendering of the same environment (an older template, say), alternated in rounds
so load changes hit both alike: HTTP episodes running the scenario's reference solution (state changes
committed, then rolled back when replayed) and queries, and queries over stdio.

Prints, side by side in one run:
* cold start of a stdio server (spawn -> first tools/list answer) and of the HTTP server (spawn -> ready);
* CPU time of one server process start (`--list-scenarios`: the package imported, then exit) with the OS
  layers and limits and without them (`--off`), alternated (steadier than wall time on a loaded machine);
* round trip p50/p95 of one query tool over stdio and HTTP through `mcp.Client`, through a raw
  JSON-RPC client (hand-written, no SDK) on the same server, and a direct in-process method call;
* episode creation on a running HTTP server vs starting a new stdio process;
* memory per HTTP episode (server RSS before/after creating the episodes);
* the environment scaled to a >1 MB state: time per state-changing call with rollback protection,
  per failed (rolled back) call, per episode reset, and a deep copy of the state for comparison;
* N concurrent HTTP episodes (create, connect, call, read state) and how many failed.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2

from envscaler_mcp.catalog.store import list_env_ids
from envscaler_mcp.launch import launch_server, resolve_target
from envscaler_mcp.launch.memory import import_server_package
from envscaler_mcp.launch.server_process import server_command, server_env
from envscaler_mcp.launch.servers import HttpServer
from envscaler_mcp.launch.target import ServerDir, read_spec

ROWS: list[tuple[str, str]] = []


def row(label: str, value: str) -> None:
    ROWS.append((label, value))
    print(f"  {label:<62} {value}", flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5) * 1000:7.3f} ms   p95 {pct(values, 0.95) * 1000:7.3f} ms"


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def scale_state(state: dict[str, Any], target_bytes: int) -> dict[str, Any]:
    """Copy records of every entity map (dict of dicts) under new keys until the state is > target_bytes."""
    state = copy.deepcopy(state)
    maps = [v for v in state.values() if isinstance(v, dict) and v and all(isinstance(r, dict) for r in v.values())]
    if not maps:
        raise SystemExit("this environment's state has no entity maps to scale")
    originals = [list(m.items()) for m in maps]
    n = 0
    while len(json.dumps(state)) < target_bytes:
        n += 1
        for m, items in zip(maps, originals, strict=True):
            for key, record in items:
                new_key = f"{key}-x{n}"
                m[new_key] = {f: (new_key if v == key else copy.deepcopy(v)) for f, v in record.items()}
    return state


MODERN = "2026-07-28"


def modern_params(params: dict[str, Any]) -> dict[str, Any]:
    """Params with the per-request envelope of protocol 2026-07-28 (the era `mcp.Client` negotiates)."""
    return {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
                                "io.modelcontextprotocol/clientCapabilities": {}}}


class RawStdio:
    """A hand-written JSON-RPC client over stdio (protocol 2026-07-28, no handshake), no SDK."""

    def __init__(self, server: ServerDir) -> None:
        self.server = server
        self.next_id = 0

    async def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.server.path)}
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", self.server.package, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=env, limit=2**24)

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": modern_params(params)})
        assert self.proc.stdout
        while True:
            message = json.loads(await self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return dict(message)

    async def close(self) -> None:
        self.proc.terminate()
        await self.proc.wait()


class RawHttp:
    """A hand-written JSON-RPC client over streamable HTTP (protocol 2026-07-28, stateless), no SDK."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx2.AsyncClient(timeout=60)
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "MCP-Protocol-Version": MODERN}
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": modern_params(params)}
        headers = {**self.headers, "Mcp-Method": method}
        if "name" in params:
            headers["Mcp-Name"] = params["name"]
        response = await self.http.post(self.url, content=json.dumps(body), headers=headers)
        text = response.text
        if text.startswith("{"):
            return dict(json.loads(text))
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        return dict(json.loads(data[-1]))

    async def close(self) -> None:
        await self.http.aclose()


async def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - t)
    return out


async def interleaved(a: Callable[[], Any], b: Callable[[], Any], n: int) -> tuple[list[float], list[float]]:
    """Time `a` and `b` in alternating blocks (after a warm-up), so load changes hit both alike."""
    await timed(a, 10)
    await timed(b, 10)
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(10):
        ta += await timed(a, max(1, n // 10))
        tb += await timed(b, max(1, n // 10))
    return ta, tb


def pick_calls(spec: dict[str, Any], scenarios: list[dict[str, Any]]) -> tuple[tuple[str, dict], list]:
    kinds = {t["name"]: t["kind"] for t in spec["tools"]}
    for scenario in scenarios:
        for call in scenario["reference_solution"]:
            if kinds[call["tool"]] == "query":
                return (call["tool"], call["arguments"]), scenario["reference_solution"]
    raise SystemExit("no scenario with a query call in its reference solution")


def start_cpu(server: ServerDir, isolation: bool) -> float:
    """CPU seconds of one confined server process (and the parent that waits for it) listing its scenarios."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = server_command(server, Path(os.devnull), isolation, ["--list-scenarios"]).argv
    subprocess.run(command, env=server_env(server), cwd=server.path, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by the threads of `pid` and of every process below it (Linux /proc schedstat,
    nanoseconds; threads that have ended are not counted: the servers' calls run on their main threads)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
        stack.extend(children.get(p, []))
    return total / 1e9


async def compare_part(args: argparse.Namespace, server: ServerDir, qtool: str, qargs: dict, solution: list,
                       state0: dict) -> None:
    """Server CPU per call, this checkout's server vs `--compare`, alternated over `--rounds` rounds."""
    other = resolve_target(str(args.compare))
    labels = {"this": server, "other": other}
    cpu: dict[tuple[str, str], list[float]] = {}
    async with launch_server(server.path, "http") as mine, launch_server(other.path, "http") as theirs:
        https = {"this": mine, "other": theirs}
        stdios = {name: RawStdio(s) for name, s in labels.items()}
        for raw in stdios.values():
            await raw.start()
        for _round in range(args.rounds + 1):  # the first round warms up and is dropped
            for name in (["this", "other"] if _round % 2 else ["other", "this"]):  # either goes first as often
                http = https[name]
                assert isinstance(http, HttpServer) and http.pid
                t0, calls = tree_cpu(http.pid), 0
                for _ in range(10):
                    created = await http.create_episode(state0, None)
                    raw = RawHttp(http.url + created["path"])
                    for call in solution + solution + [{"tool": qtool, "arguments": qargs}] * 10:
                        await raw.request("tools/call", {"name": call["tool"], "arguments": call["arguments"]})
                        calls += 1
                    await raw.close()
                    await http.admin.delete(f"/admin/episodes/{created['episode_id']}")
                if _round:
                    cpu.setdefault((name, "http"), []).append((tree_cpu(http.pid) - t0) / calls)
                pipe = stdios[name]
                t0 = tree_cpu(pipe.proc.pid)
                for _ in range(args.calls):
                    await pipe.request("tools/call", {"name": qtool, "arguments": qargs})
                if _round:
                    cpu.setdefault((name, "stdio"), []).append((tree_cpu(pipe.proc.pid) - t0) / args.calls)
        for raw in stdios.values():
            await raw.close()
    print(f"\nserver CPU per call ({args.rounds} rounds, medians; load {os.getloadavg()[0]:.1f})"
          f"\n  this:  {server.path}\n  other: {other.path}")
    for transport in ("http", "stdio"):
        this = statistics.median(cpu[("this", transport)])
        that = statistics.median(cpu[("other", transport)])
        row(f"{transport}: this / other", f"{this * 1000:6.3f} ms / {that * 1000:6.3f} ms = {this / that:5.2f} x")


async def main(args: argparse.Namespace) -> None:
    from envscaler_mcp.catalog.store import scenarios_for

    server = resolve_target(args.env)
    spec = read_spec(server)
    scenarios = [s.model_dump(mode="json") for s in scenarios_for(args.env) if s.reference_solution]
    (qtool, qargs), solution = pick_calls(spec, scenarios)
    scenario = next(s for s in scenarios if s["reference_solution"] is solution)
    state0 = scenario["initial_state"]
    print(f"environment {args.env}: {len(spec['tools'])} tools; query used for round trips: {qtool}")
    if args.compare:
        await compare_part(args, server, qtool, qargs, solution, state0)
        return

    print("\nstart")
    starts = []
    async with launch_server(server.path, "stdio") as stdio:
        for _ in range(args.starts):
            t = time.perf_counter()
            async with stdio.episode(state0) as ep:
                await ep.list_tools()
                starts.append(time.perf_counter() - t)
    row("stdio cold start (spawn -> first tools/list), median", f"{statistics.median(starts) * 1000:8.1f} ms")
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(3 * args.starts):
        for isolation in (True, False):
            cpu[isolation].append(start_cpu(server, isolation))
    for isolation, label in ((True, "on"), (False, "off")):
        row(f"CPU of one server process start, OS layers {label}, median", f"{statistics.median(cpu[isolation]) * 1000:8.1f} ms")
    t = time.perf_counter()
    async with launch_server(server.path, "http") as http:
        assert isinstance(http, HttpServer)
        row("HTTP server start (spawn -> ready)", f"{(time.perf_counter() - t) * 1000:8.1f} ms")
        await http_part(http, server, spec, state0, qtool, qargs, solution, args, statistics.median(starts))
    await stdio_part(server, state0, qtool, qargs, args)
    inproc_part(server, spec, state0, qtool, qargs, solution, args)


async def stdio_part(server: ServerDir, state0: dict, qtool: str, qargs: dict, args: argparse.Namespace) -> None:
    print("\nround trip over stdio")
    raw = RawStdio(server)
    await raw.start()
    async with launch_server(server.path, "stdio") as stdio, stdio.episode(state0) as ep:
        sdk, raw_t = await interleaved(lambda: ep.call_tool(qtool, qargs),
                                       lambda: raw.request("tools/call", {"name": qtool, "arguments": qargs}),
                                       args.calls)
    await raw.close()
    row("mcp.Client (stdio)", ms(sdk))
    row("raw JSON-RPC client (stdio)", ms(raw_t))
    row("mcp.Client overhead over raw (p50)", f"{(pct(sdk, .5) / pct(raw_t, .5) - 1) * 100:+.0f} %")


async def http_part(http: HttpServer, server: ServerDir, spec: dict, state0: dict, qtool: str, qargs: dict,
                    solution: list, args: argparse.Namespace, stdio_start: float) -> None:
    print("\nround trip over HTTP")
    async with http.episode(state0) as ep:
        raw = RawHttp(http.url + f"/episodes/{ep.episode_id}/mcp")
        sdk, raw_t = await interleaved(lambda: ep.call_tool(qtool, qargs),
                                       lambda: raw.request("tools/call", {"name": qtool, "arguments": qargs}),
                                       args.calls)
        await raw.close()
    row("mcp.Client (HTTP)", ms(sdk))
    row("raw JSON-RPC client (HTTP)", ms(raw_t))
    row("mcp.Client overhead over raw (p50)", f"{(pct(sdk, .5) / pct(raw_t, .5) - 1) * 100:+.0f} %")

    print("\nepisodes")
    created: list[str] = []

    async def create() -> None:
        created.append((await http.create_episode(None, None))["episode_id"])

    create_t = await timed(create, 50)
    for eid in created:
        await http.admin.delete(f"/admin/episodes/{eid}")

    async def open_and_call() -> None:
        async with http.episode(state0) as ep:
            await ep.call_tool(qtool, qargs)

    full_t = await timed(open_and_call, 20)
    row("HTTP episode creation (admin POST, default state)", ms(create_t))
    row("HTTP episode: create + connect mcp.Client + one call + close", ms(full_t))
    row("stdio cold start / HTTP episode creation (p50)", f"{stdio_start / pct(create_t, .5):8.0f} x")

    assert http.pid
    before = _rss_kb(http.pid)
    ids = [(await http.create_episode(None, None))["episode_id"] for _ in range(args.episodes)]
    after = _rss_kb(http.pid)
    default_bytes = len(json.dumps(json.loads(
        (server.path / server.package / "data" / "default_state.json").read_text())))
    row(f"memory per HTTP episode ({args.episodes} episodes, default state {default_bytes / 1024:.0f} KB JSON)",
        f"{(after - before) / args.episodes:8.1f} KB")
    for eid in ids:
        await http.admin.delete(f"/admin/episodes/{eid}")

    print(f"\n{args.episodes} concurrent HTTP episodes")
    errors: list[str] = []

    async def one(i: int) -> None:
        try:
            async with http.episode(state0) as ep:
                for _ in range(3):
                    r = await ep.call_tool(qtool, qargs)
                    if r.is_error:
                        errors.append(r.content[0].text)  # type: ignore[union-attr]
                if await ep.get_state() != state0:
                    errors.append("state changed by a query")
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(args.episodes):
            tg.start_soon(one, i)
    row(f"{args.episodes} episodes x (connect, 3 calls, read state, close), wall time",
        f"{(time.perf_counter() - t):8.2f} s")
    row("errors", f"{len(errors):8d}" + (f"  first: {errors[0][:80]}" if errors else ""))

    print("\nlarge state over HTTP")
    big = scale_state(state0, args.big_bytes)
    kinds = {t["name"]: t["kind"] for t in spec["tools"]}
    changes = [c for c in solution if kinds[c["tool"]] == "state_change"]
    reset_t, change_t, small_t = [], [], []
    for _ in range(args.big_reps):
        for state, times in ((state0, small_t), (big, change_t)):  # alternate, so load hits both alike
            t = time.perf_counter()
            async with http.episode(state) as ep:
                if state is big:
                    reset_t.append(time.perf_counter() - t)
                await ep.list_tools()  # as an agent does first (the client also validates calls against it)
                for call in solution:
                    t = time.perf_counter()
                    await ep.call_tool(call["tool"], call["arguments"])
                    if call in changes:
                        times.append(time.perf_counter() - t)
    row(f"state {len(json.dumps(big)) / 1e6:.2f} MB: episode create + connect (admin POST of the state)",
        ms(reset_t))
    row(f"same state-changing calls on the scenario's own state ({len(json.dumps(state0)) / 1e3:.0f} KB), HTTP",
        ms(small_t))
    row(f"state {len(json.dumps(big)) / 1e6:.2f} MB: state-changing call round trip (mcp.Client, HTTP)",
        ms(change_t))


def inproc_part(server: ServerDir, spec: dict, state0: dict, qtool: str, qargs: dict, solution: list,
                args: argparse.Namespace) -> None:
    print("\nin process (no transport)")
    module = import_server_package(server)
    pkg = __import__(f"{module.__name__}.runtime.package", fromlist=["load_package"])
    episode_mod = __import__(f"{module.__name__}.runtime.episode", fromlist=["Episode"])
    package = pkg.load_package(server.path / server.package, module.__name__)
    raw_class = package.env_class.__mro__[1]
    plain = raw_class()
    for k, v in copy.deepcopy(state0).items():
        setattr(plain, k, v)
    direct = []
    for _ in range(args.calls):
        t = time.perf_counter()
        getattr(plain, qtool)(**qargs)
        direct.append(time.perf_counter() - t)
    row("direct method call on the class (no server)", ms(direct))
    ep = episode_mod.Episode(package.env_class, package.state_names, state0)
    guarded = []
    for _ in range(args.calls):
        t = time.perf_counter()
        ep.call(qtool, qargs, 10.0)
        guarded.append(time.perf_counter() - t)
    row("Episode.call (journal + timeout + JSON result), same query", ms(guarded))

    big = scale_state(state0, args.big_bytes)
    size = len(json.dumps(big)) / 1e6
    kinds = {t["name"]: t["kind"] for t in spec["tools"]}
    reset_t, change_t, undo_t, copy_t, bare_t = [], [], [], [], []
    for _ in range(args.big_reps):
        bare = raw_class()
        for k, v in copy.deepcopy(big).items():
            setattr(bare, k, v)
        for call in solution:  # the same calls on the plain class: what the environment code itself costs
            t = time.perf_counter()
            getattr(bare, call["tool"])(**call["arguments"])
            if kinds[call["tool"]] == "state_change":
                bare_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        ep = episode_mod.Episode(package.env_class, package.state_names, big)
        reset_t.append(time.perf_counter() - t)
        for call in solution:
            t = time.perf_counter()
            out = ep.call(call["tool"], call["arguments"], 10.0)
            if kinds[call["tool"]] == "state_change":
                change_t.append(time.perf_counter() - t)
                assert not out.is_error, out.text
        for call in solution:  # the same calls again: most now fail ({"success": false}) and roll back
            if kinds[call["tool"]] != "state_change":
                continue
            t = time.perf_counter()
            out = ep.call(call["tool"], call["arguments"], 10.0)
            if out.rolled_back:
                undo_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        copy.deepcopy(ep.get_state())
        copy_t.append(time.perf_counter() - t)
    row(f"state {size:.2f} MB: same state-changing calls on the plain class (no server)", ms(bare_t))
    row(f"state {size:.2f} MB: state-changing call with rollback protection", ms(change_t))
    if undo_t:
        row(f"state {size:.2f} MB: failed state-changing call, rolled back", ms(undo_t))
    row(f"state {size:.2f} MB: episode reset (load the state into a new episode)", ms(reset_t))
    row(f"state {size:.2f} MB: for comparison, one deep copy of the state", ms(copy_t))


if __name__ == "__main__":
    envs = list_env_ids()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="ecommerce_orders" if "ecommerce_orders" in envs else (envs or [""])[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per round-trip measurement")
    parser.add_argument("--starts", type=int, default=5, help="stdio cold starts to time")
    parser.add_argument("--episodes", type=int, default=200, help="concurrent HTTP episodes")
    parser.add_argument("--big-bytes", type=int, default=1_200_000, help="size of the scaled state (JSON bytes)")
    parser.add_argument("--big-reps", type=int, default=5, help="episodes on the scaled state")
    parser.add_argument("--compare", type=Path, help="another server folder of the same environment: "
                                                     "compare only the server CPU per call")
    parser.add_argument("--rounds", type=int, default=6, help="alternated rounds for --compare")
    anyio.run(main, parser.parse_args())
