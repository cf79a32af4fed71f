"""Run one command and split its whole process tree's CPU by kind of process (root and cgroup v1 cpuacct).

    sudo .venv/bin/python benchmarks/tree_cpu_split.py -- envscaler-mcp eval --all --agent oracle --home HOME ...

The command runs in a cpuacct group of its own (benchmarks/cpuacct.py); every 20 ms its new descendants are
looked at, and an episode zygote (a server's, started as an interpreter of its own, or the zygote template
that forks them: it and the episode processes they fork), a server (the server zygote and what it forks:
servers and their waiting parents) or a validator worker (its zygote and batch processes) is moved to a child
group, which what it forks later follows (an episode zygote caught between its fork and its exec counts with
the servers). The rest is the command's own process and whatever else it runs. Prints user and system seconds
per group, and how many processes of each kind were seen (a process forked and gone between two looks is
counted with its parent's group, where it ran).
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpuacct import Tree, Usage

# Looked up in this order: an episode zygote's command line also names the server's package.
KINDS = {"episodes": ("isolation.episode_zygote", "isolation.zygote_template"),
         "servers": ("server_zygote", "confine_server"), "validators": ("sandbox.worker",)}


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _descends(pid: int, root: int) -> bool:
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        pid = _parent(pid)
    return False


def measure(command: list[str]) -> tuple[int, float, Usage, collections.Counter[str]] | None:
    """Run `command` in a cpuacct group of its own, its processes of each kind in child groups: (exit code, wall
    seconds, CPU used per group, processes seen per kind); None when the controller is not there."""
    tree = Tree.create("tree-cpu-split")
    if tree is None:
        return None
    tree.enter()
    before = tree.read()
    seen: collections.Counter[str] = collections.Counter()
    placed: set[int] = set()
    done = threading.Event()
    started = time.monotonic()
    proc = subprocess.Popen(command)

    def look() -> None:
        while not done.is_set():
            for name in os.listdir("/proc"):
                pid = int(name) if name.isdigit() else 0
                if not pid or pid in placed or not _descends(pid, proc.pid):
                    continue
                line = _cmdline(pid)
                kind = next((k for k, keys in KINDS.items() if any(key in line for key in keys)), None)
                if kind is not None:
                    tree.place(kind, [pid])
                    placed.add(pid)
                    seen[kind] += 1
            time.sleep(0.02)

    looker = threading.Thread(target=look, daemon=True)
    looker.start()
    code = proc.wait()
    wall = time.monotonic() - started
    done.set()
    looker.join()
    tree.settle()
    used = tree.read() - before
    tree.remove()
    return code, wall, used, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command (after --)")
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"] or parser.error("no command given")
    measured = measure(command)
    if measured is None:
        raise SystemExit(1)
    code, wall, used, seen = measured
    print(f"exit {code}, {wall:.1f} s wall, load {os.getloadavg()[0]:.1f}")
    print(f"  {'whole tree':12s} user {used.user[''] / 1e9:8.2f} s  system {used.system[''] / 1e9:8.2f} s")
    for kind in KINDS:
        if kind in used.user:
            print(f"  {kind:12s} user {used.user[kind] / 1e9:8.2f} s  system {used.system[kind] / 1e9:8.2f} s"
                  f"  ({seen[kind]} processes seen)")
    user, system = used.own()
    print(f"  {'the rest':12s} user {user / 1e9:8.2f} s  system {system / 1e9:8.2f} s  (the command's own process)")
    raise SystemExit(code)


if __name__ == "__main__":
    main()
