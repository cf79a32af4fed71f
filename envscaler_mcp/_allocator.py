"""The C allocator of a command with large states (eval, the gate): their buffers given back to the system
when freed.

glibc's malloc serves a buffer of 128 kB or more with its own mapping, unmapped when freed, but raises that
threshold to the size of each such buffer freed (up to 32 MB): after the first 3 MB state text, every later one
comes from the heap, where what is freed stays resident for the process's life. With states of megabytes this
kept about 35 MB resident in eval's process beyond what it holds (12 scenarios of 3 MB: 148 -> 113 MB at the
tree's peak; benchmarks/README.md). Fixing the threshold keeps large buffers in their own mappings. Elsewhere
than glibc (musl, macOS) nothing changes."""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
LARGE_BUFFER = 256 << 10

_done = False


def give_back_large_buffers(threshold: int = LARGE_BUFFER) -> bool:
    """Have this process's allocator map every buffer of `threshold` bytes or more on its own (unmapped when
    freed) and trim the heap's free top beyond 4x that; True when glibc took it (once per process)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _done = bool(mallopt(M_MMAP_THRESHOLD, threshold)) and bool(mallopt(M_TRIM_THRESHOLD, 4 * threshold))
    return _done


def trim() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; nothing elsewhere)."""
    if not _done:
        return
    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    malloc_trim.argtypes = [ctypes.c_size_t]
    malloc_trim(0)
