"""Whole-tree CPU from a cgroup-v1 cpuacct controller, split by kind of process (optional: root and cgroup v1).

    tree = Tree.create("episode-cpu")        # None when the controller is missing or not writable
    tree.enter()                             # this process and everything it forks from now on
    tree.place("servers", [pid, ...])        # these processes and their descendants into a child group
    before = tree.read(); ...; used = tree.read() - before   # Usage: ns of user and system time per group
    tree.remove()

Counts what `getrusage` and /proc/PID/stat miss: processes reaped by a namespace's PID 1, a zygote's
children, the kernel's time in forks and page faults. A child group's time also counts in its parent's
(cgroup v1 is hierarchical): `Usage.own` is the parent's time less its children's.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup/cpuacct")


@dataclass
class Usage:
    """Nanoseconds of user and system CPU per group ("" is the whole tree)."""

    user: dict[str, int] = field(default_factory=dict)
    system: dict[str, int] = field(default_factory=dict)

    def __sub__(self, other: Usage) -> Usage:
        return Usage({k: v - other.user.get(k, 0) for k, v in self.user.items()},
                     {k: v - other.system.get(k, 0) for k, v in self.system.items()})

    def own(self) -> tuple[int, int]:
        """(user, system) of the tree's own processes, outside every child group."""
        kids = [k for k in self.user if k]
        return (self.user[""] - sum(self.user[k] for k in kids), self.system[""] - sum(self.system[k] for k in kids))


class Tree:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.groups: list[str] = []

    @classmethod
    def create(cls, name: str) -> Tree | None:
        """A fresh group under the cpuacct controller, or None (with the reason printed) when unavailable."""
        path = ROOT / f"{name}-{os.getpid()}"
        try:
            path.mkdir()
        except OSError as exc:
            print(f"note: no cpuacct cgroup ({exc.strerror or exc}): whole-tree CPU not measured", flush=True)
            return None
        return cls(path)

    def enter(self, pid: int = 0) -> None:
        (self.path / "cgroup.procs").write_text(str(pid or os.getpid()))

    def place(self, group: str, pids: list[int]) -> None:
        """Move `pids` and every descendant they have now into child group `group`; what they fork later
        follows them."""
        path = self.path / group
        if group not in self.groups:
            path.mkdir(exist_ok=True)
            self.groups.append(group)
        for pid in _with_descendants(pids):
            try:
                (path / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass  # ended meanwhile

    def settle(self, timeout_s: float = 10.0) -> None:
        """Wait until no process but this one (when it entered the tree) is left in it (a pass's servers and
        workers still exiting would be charged to whatever is measured next)."""
        deadline = time.monotonic() + timeout_s
        paths = [self.path, *(self.path / group for group in self.groups)]
        while time.monotonic() < deadline:
            procs = {p for path in paths for p in (path / "cgroup.procs").read_text().split()}
            if procs <= {str(os.getpid())}:
                return
            time.sleep(0.05)

    def read(self) -> Usage:
        usage = Usage()
        for group in ("", *self.groups):
            path = self.path / group if group else self.path
            usage.user[group] = int((path / "cpuacct.usage_user").read_text())
            usage.system[group] = int((path / "cpuacct.usage_sys").read_text())
        return usage

    def remove(self) -> None:
        """Move this process back to the root group and remove the groups (one still holding a process: in the
        background, once it is empty)."""
        try:
            (ROOT / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            pass
        for path in [self.path / group for group in self.groups] + [self.path]:
            for _ in range(20):  # processes of the last pass may still be exiting
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    _reap()  # a child left unwaited stays in the group as a zombie
                    time.sleep(0.1)
            else:  # a process of the run still ending (it leaves with this one): removed once it has, in the background
                subprocess.Popen(["sh", "-c", f"for i in $(seq 300); do rmdir '{path}' 2>/dev/null && exit; sleep 0.2; done"],
                                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _reap() -> None:
    """Wait for this process's children that have ended (the end of a run: nothing else waits for them)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _with_descendants(pids: list[int]) -> list[int]:
    seen: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                todo.extend(int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            continue
    return seen
