"""Scenarios in flight bounded by the bytes of their lines, not only by their count.

A scenario being checked or run costs the machine a multiple of its line: its initial state parsed in the
command, the final states read back (two reference replays at once, solutions, the agent's), the server's
parse of the state file and each episode process's own copy. With 1.4 MB lines, four such scenarios at once
were most of a gate's 578 MB over its process tree, two still 458 MB. `LineBudget` lets scenarios start while
the lines in flight stay within `max_bytes` (one always starts when none is in flight, however large): a
catalog of small states runs at its full concurrency, one of megabyte states one or two at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

# Scenario line bytes in flight at once: one 1.4 MB scenario, two of 1 MB, or hundreds of small ones.
IN_FLIGHT_BYTES = 2 << 20


def is_large_line(length: int) -> bool:
    """Whether a scenario line of `length` bytes is over half the bytes in flight: eval runs such episodes, and the
    gate such scenarios, one at a time, with one validator process."""
    return length > IN_FLIGHT_BYTES // 2


class LineBudget:
    """Bytes of scenario lines in flight, at most `max_bytes` of them unless a single one is larger.

    Used from one event loop: the bytes are counted without a lock (nothing awaits between the test and the
    count), so a scenario that fits starts without a trip through the loop; one that does not waits until some
    bytes are given back, then tests again."""

    def __init__(self, max_bytes: int = IN_FLIGHT_BYTES) -> None:
        self.max_bytes = max_bytes
        self.held = 0
        self.most = 0  # the most bytes held at once
        self._released: anyio.Event | None = None  # set when bytes are given back (made when someone waits)

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        """Wait until `size` more bytes fit (or nothing is in flight), hold them for the block."""
        size = max(0, size)
        while self.held and self.held + size > self.max_bytes:
            if self._released is None:
                self._released = anyio.Event()
            await self._released.wait()
        self.held += size
        self.most = max(self.most, self.held)
        try:
            yield
        finally:
            self.held -= size
            released, self._released = self._released, None
            if released is not None:
                released.set()
