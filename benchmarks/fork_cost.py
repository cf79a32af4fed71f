"""What a fork costs by the size of the process forked: `python benchmarks/fork_cost.py MODULES` imports MODULES
(a comma list, or - for none), freezes the collector as the zygotes do, then forks 100 children that each build
and dump a small dict and exit with os._exit; prints the parent's resident MB and the wall ms per fork and run.
Run it inside a cpuacct group to see user and system time (benchmarks/README.md)."""

from __future__ import annotations

import gc
import importlib
import json
import os
import sys
import time


def main() -> None:
    for name in sys.argv[1].split(",") if len(sys.argv) > 1 and sys.argv[1] != "-" else []:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    n = 100
    started = time.perf_counter()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            json.dumps({f"k{j}": {"a": j, "b": str(j)} for j in range(200)})
            os._exit(0)
        os.waitpid(pid, 0)
    print(f"resident {rss:.0f} MB, {1000 * (time.perf_counter() - started) / n:.2f} ms per fork and run (wall)")


if __name__ == "__main__":
    main()
