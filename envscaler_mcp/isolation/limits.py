"""Resource limits of a launched server process, set as hard limits before its package is imported.

    apply(memory_mb=2048, cpu_s=3600) | cap_threads(128, counted_alone=True) -> {layer: [active, detail]}

* `RLIMIT_AS` (address space): an allocation past it fails (MemoryError), System V shared memory is refused
  by seccomp, so nothing escapes the count.
* `RLIMIT_CPU`: the process is killed (SIGXCPU, then SIGKILL 5 s later) once it has used that much CPU time.
* `RLIMIT_NPROC` (threads): the kernel counts it per user id (per user namespace and user id), so it caps
  this server only when the server's uid is its own (`counted_alone`: root made it a uid of its own, or a
  normal user's server is alone in its user namespace). Otherwise it would count every process of the
  user, and is left unset: threads are then bounded only by the address space (each needs a stack).
* no core dumps.

Standard library only.
"""

from __future__ import annotations

import resource
from typing import Any

# Far above what a generated server uses (mini_shop over HTTP with 16 concurrent episodes: 85 MB of address
# space, one thread) and still a stop to a runaway: an HTTP server holds up to 1000 episodes' states and
# serves a whole run.
MEMORY_MB, CPU_S, THREADS = 2048, 3600, 128


def apply(memory_mb: int, cpu_s: int) -> dict[str, list[Any]]:
    """Set the address-space and CPU limits (0: leave that one unset) and no core dumps; return the layer."""
    done = ["no core dumps"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_mb:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        done.insert(0, f"address space {memory_mb} MiB")
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        done.insert(1 if memory_mb else 0, f"{cpu_s} s of CPU time")
    return {"resource-limits": [True, ", ".join(done) + " (hard limits)"]}


def cap_threads(threads: int, counted_alone: bool) -> dict[str, list[Any]]:
    """At most `threads` threads (0: no limit) when the kernel counts them for this process alone."""
    if not threads:
        return {"thread-limit": [False, "no thread limit was asked for"]}
    if not counted_alone:
        return {"thread-limit": [False, "RLIMIT_NPROC would count every process of this user (no user namespace "
                                        "and not root); threads are bounded only by the address space"]}
    resource.setrlimit(resource.RLIMIT_NPROC, (threads, threads))
    return {"thread-limit": [True, f"at most {threads} threads (RLIMIT_NPROC on a user id of its own)"]}
