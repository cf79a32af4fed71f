"""Sample a command with `perf record -a` and split the CPU samples by the role of the process they fell in.

    sudo .venv/bin/python benchmarks/perf_by_process.py [--freq 499] [--symbols ROLE,...] -- envscaler-mcp eval ...

Finer than tree_cpu_split.py (cgroups): the server zygote, each server's waiting parent, the server, its
episode zygote and their episodes are told apart, and so are the validator worker, its zygote and its batch
processes, as is each role's kernel share. Roles come from the shape of the process tree the command grows
(perf's fork and exec events), counted from the command's process:

    the command
      server zygote (exec)  ->  waiting parent (fork)  ->  server (fork)  ->  episode zygote (exec)  ->  episode
                            ->  zygote template (exec)  ->  its fork (joins a server's namespaces)  ->  episode
                                zygote (fork, in the server's PID namespace)  ->  episode
      validator worker (exec)  ->  its zygote (exec, PID 1 of its namespace)  ->  batch process (fork)

A process that fits none of these is "unknown"; samples outside the command's tree (other programs, the idle
loop, kernel threads) are "elsewhere", the idle loop apart. Needs `perf` (Debian: linux-perf) and root.
Each sample is 1/freq s of one CPU's time.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")
_EXEC = re.compile(r"PERF_RECORD_COMM exec: (\S+):(\d+)/(\d+)")
_SAMPLE = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+")
_IDLE = ("swapper",)


class Processes:
    """The process tree perf saw: parents, which processes exec'd, the command's pid."""

    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.children: dict[int, list[int]] = collections.defaultdict(list)
        self.execd: set[int] = set()
        self.root = 0

    def fork(self, pid: int, ppid: int) -> None:
        if pid != ppid:  # a thread has its process's pid
            self.parent[pid] = ppid
            self.children[ppid].append(pid)

    def path(self, pid: int) -> list[int] | None:
        """The processes from the command's child down to `pid`; None outside the command's tree."""
        chain = [pid]
        while chain[-1] != self.root:
            up = self.parent.get(chain[-1])
            if up is None:
                return None
            chain.append(up)
        return chain[-2::-1]

    def depth(self, pid: int) -> int:
        return 1 + max((self.depth(c) for c in self.children[pid]), default=0)


def role(procs: Processes, pid: int, server_zygote: int | None) -> str:
    if pid == procs.root:
        return "command"
    path = procs.path(pid)
    if path is None:
        return "elsewhere"
    top, level = path[0], len(path)
    if top not in procs.execd:
        return "unknown"
    if top == server_zygote:
        if level >= 2 and path[1] in procs.execd:  # the zygote template's branch (isolation/zygote_template.py)
            names = {2: "zygote template", 3: "template's fork", 4: "episode zygote", 5: "episode"}
        else:
            names = {1: "server zygote", 2: "waiting parent", 3: "server", 4: "episode zygote", 5: "episode"}
        return names.get(level, "unknown")
    return {1: "validator worker", 2: "validator zygote", 3: "validator batch"}.get(level, "unknown")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--freq", type=int, default=499, help="samples per second per CPU (default 499)")
    parser.add_argument("--symbols", default="", help="comma list of roles whose top symbols to print")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"] or parser.error("no command given")
    with tempfile.TemporaryDirectory(prefix="perf-by-process-") as tmp:
        data = Path(tmp) / "perf.data"
        recorded = subprocess.run(["perf", "record", "-a", "-F", str(args.freq), "-q", "-o", str(data), "--",
                                   *command], check=False)
        script = subprocess.run(["perf", "script", "-i", str(data), "--show-task-events", "-F",
                                 "comm,pid,tid,event,ip,sym,dso"], capture_output=True, text=True, check=False)
    procs = Processes()
    samples: list[tuple[int, bool, str, bool]] = []  # pid, in the kernel, symbol, idle loop
    for line in script.stdout.splitlines():
        if (m := _FORK.search(line)) is not None:
            procs.fork(int(m.group(1)), int(m.group(3)))
        elif (m := _EXEC.search(line)) is not None:
            pid = int(m.group(2))
            procs.execd.add(pid)
            if not procs.root and m.group(1) == Path(command[0]).name[:15]:
                procs.root = pid
        elif "PERF_RECORD" not in line and (m := _SAMPLE.match(line)) is not None:
            fields = line[m.end():].split()
            symbol = " ".join(fields[2:-1]) if len(fields) > 2 else "?"
            samples.append((int(m.group(2)), "[kernel.kallsyms]" in line, symbol, m.group(1) in _IDLE))
    if not procs.root:
        raise SystemExit(f"error: perf saw no exec of {Path(command[0]).name} (exit {recorded.returncode})")
    tops = procs.children[procs.root]
    server_zygote = max(tops, key=procs.depth) if tops else None
    if server_zygote is not None and procs.depth(server_zygote) < 5:
        server_zygote = None  # no server forked its episodes here
    total, kernel = collections.Counter[str](), collections.Counter[str]()
    pids: dict[str, set[int]] = collections.defaultdict(set)
    symbols: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for pid, in_kernel, symbol, idle in samples:
        name = "idle" if idle else role(procs, pid, server_zygote)
        total[name] += 1
        kernel[name] += in_kernel
        pids[name].add(pid)
        symbols[name][symbol] += 1
    ms = 1000 / args.freq
    busy, everything = sum(n for name, n in total.items() if name != "idle"), sum(total.values())
    print(f"exit {recorded.returncode}; {busy * ms / 1000:.2f} s of CPU sampled outside the idle loop "
          "(share: of all samples, the idle loop's included)")
    print(f"{'role':18s} {'CPU s':>8s} {'share':>6s} {'kernel':>7s} {'processes':>10s}")
    for name, n in total.most_common():
        print(f"{name:18s} {n * ms / 1000:8.2f} {100 * n / everything:5.1f}% {100 * kernel[name] / n:6.0f}% "
              f"{len(pids[name]):10d}")
    for name in filter(None, args.symbols.split(",")):
        print(f"--- {name}: top symbols (samples)")
        for symbol, n in symbols[name].most_common(20):
            print(f"{n:7d}  {symbol}")
    sys.exit(recorded.returncode)


if __name__ == "__main__":
    main()
