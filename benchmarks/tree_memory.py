"""Memory of a command and every process it starts (servers, sandbox workers), read from /proc while it runs.

Three measures, because RSS alone misleads once processes fork:

* `peak_main_mb`: the command's own process, its peak RSS (VmHWM: the kernel's high-water mark, exact, not
  sampled);
* `peak_largest_mb` (and `largest`, which process): the largest peak RSS of any single process of the tree
  (each one's VmHWM, read while it is alive). A process forked without exec (a zygote's worker) counts the
  pages it shares with its parent, so this can be a child that holds little of its own;
* `peak_tree_pss_mb`: the most memory the tree held at once: the sum of each process's PSS (proportional set
  size: a page shared by k processes counts 1/k in each), sampled every `every` seconds. This is what the
  command costs the machine. `peak_tree_mb`, the sum of RSS at the same samples, counts a page shared by k
  processes k times (forked workers, the zygote's imports): an upper bound, kept for the earlier rows.

A peak shorter than the sampling interval can be missed by the two sums, and a process that lives less than
one interval by all four. Not used: ru_maxrss from wait4, what this bench reported before as "peak RSS (one
process)". Linux keeps in it the high-water mark of the memory a process had before exec, so for a command
started by fork/vfork + exec it is at least the peak RSS of the process that started it: this bench's own
(1.85 GB after it had loaded 115 scenarios of 1.3 MB to attach their references, reported for a `render`
whose one process never passed 80 MB).
"""

from __future__ import annotations

import os
import threading
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")


def tree(root: int) -> list[int]:
    """The pids of `root` and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _kb_fields(path: str, names: tuple[bytes, ...]) -> dict[bytes, int]:
    """`Name:  123 kB` lines of a /proc file, in bytes ({} once the process is gone)."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(b":")
        if name in names:
            out[name] = int(rest.split()[0]) * 1024
    return out


def _label(pid: int, root: int) -> str:
    if pid == root:
        return "the command"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid}"
    return " ".join([os.path.basename(argv[0]), *argv[1:4]])[:80] if argv else f"pid {pid}"


class TreeSampler(threading.Thread):
    """The measures above for the process tree of `pid`, sampled every `every` s until `stop` is set."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.every = pid, every
        self.peak_rss_sum = self.peak_pss_sum = self.main_hwm = self.largest_hwm = self.most = 0
        self.largest = ""
        self.at_peak: list[tuple[str, int]] = []  # each process's PSS at the sample of the tree's peak PSS
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            pids = tree(self.pid)
            rss_sum = pss_sum = 0
            pss_of: dict[int, int] = {}
            for pid in pids:
                status = _kb_fields(f"/proc/{pid}/status", (b"VmRSS", b"VmHWM"))
                rss_sum += status.get(b"VmRSS", 0)
                pss_of[pid] = _kb_fields(f"/proc/{pid}/smaps_rollup", (b"Pss",)).get(b"Pss", 0)
                pss_sum += pss_of[pid]
                hwm = status.get(b"VmHWM", 0)
                if pid == self.pid:
                    self.main_hwm = max(self.main_hwm, hwm)
                if hwm > self.largest_hwm:
                    self.largest_hwm, self.largest = hwm, _label(pid, self.pid)
            if pss_sum > self.peak_pss_sum:
                self.at_peak = sorted(((_label(pid, self.pid), pss) for pid, pss in pss_of.items() if pss),
                                      key=lambda item: -item[1])
            self.peak_rss_sum, self.peak_pss_sum = max(self.peak_rss_sum, rss_sum), max(self.peak_pss_sum, pss_sum)
            self.most = max(self.most, len(pids))
            self.stop.wait(self.every)

    def measures(self) -> dict[str, Any]:
        """The row's memory fields (MB)."""
        return {"peak_main_mb": round(self.main_hwm / 1e6, 1), "peak_largest_mb": round(self.largest_hwm / 1e6, 1),
                "largest": self.largest, "peak_tree_pss_mb": round(self.peak_pss_sum / 1e6, 1),
                "peak_tree_mb": round(self.peak_rss_sum / 1e6, 1), "most_processes": self.most,
                "pss_at_peak": [[label, round(pss / 1e6, 1)] for label, pss in self.at_peak]}
