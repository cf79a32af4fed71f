"""Progress of a synthesis run: a line per model call and per finished item, on the terminal and in a log file.

A slow model (the embedded 1.5B on two cores takes minutes per call) must never leave the terminal silent:
every call says when it starts and, when it ends, its tokens, time and speed; every finished item says how it
ended, how many are done and the estimated time left. The same lines go to a log file in the output folder.

The item and step a call belongs to travel in context variables: a pipeline sets `current_item` in the task of
one item (`item_scope`), `synth.llm.ask` sets `current_step`; the provider wrapper reads both.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, Provider, ToolDef

current_item: ContextVar[str] = ContextVar("synth_current_item", default="")
current_step: ContextVar[str] = ContextVar("synth_current_step", default="")


@contextmanager
def item_scope(item_id: str) -> Iterator[None]:
    """Calls made inside belong to item `item_id`."""
    token = current_item.set(item_id)
    try:
        yield
    finally:
        current_item.reset(token)


def duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def turn_speed(turn: AssistantTurn) -> str:
    """'812 tokens in, 120 out, 14.2s, 8.5 tokens out/s' (the speed only where the provider reported output
    tokens; over the whole call, reading the prompt included)."""
    usage = turn.usage
    text = f"{usage.input_tokens} tokens in, {usage.output_tokens} out, {turn.latency_s:.1f}s"
    if turn.cached:
        return text + ", from the cache"
    if usage.output_tokens and turn.latency_s > 0:
        text += f", {usage.output_tokens / turn.latency_s:.1f} tokens out/s"
    return text


class RunLog:
    """Progress lines of one run, echoed to stderr and appended to `path` (flushed line by line)."""

    def __init__(self, path: Path, echo: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
        self._clock = clock
        self._totals: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._started: dict[str, float] = {}

    def line(self, text: str, echo: bool = True) -> None:
        """One progress line, time-stamped in the file (and printed, unless `echo` is False)."""
        with self.path.open("a", encoding="utf-8") as file:  # opened per line: nothing to close, nothing lost
            file.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} {text}\n")
        if echo:
            self._echo(text)

    def expect(self, stage: str, total: int) -> None:
        """`total` items of `stage` are to be made from now (the base of its ETA)."""
        self._totals[stage] = total
        self._done[stage] = 0
        self._started[stage] = self._clock()
        self.line(f"[{stage}] {total} item(s) to make")

    def item(self, stage: str, item_id: str, outcome: str) -> None:
        """Item `item_id` of `stage` is finished (kept or dropped): count it and say what is left."""
        done = self._done[stage] = self._done.get(stage, 0) + 1
        started = self._started.setdefault(stage, self._clock())
        elapsed = self._clock() - started
        total = self._totals.get(stage)
        count = f"{done}/{total}" if total else str(done)
        eta = ""
        if total and done < total:
            eta = f", ETA {duration(elapsed / done * (total - done))}"
        self.line(f"[{stage} {count}] {item_id}: {outcome} ({duration(elapsed)} elapsed{eta})")

    def call_started(self, spec: str) -> None:
        self.line(f"  {self.where()}: asking {spec}")

    def call_ended(self, turn: AssistantTurn) -> None:
        self.line(f"  {self.where()}: answered ({turn_speed(turn)})")

    def call_failed(self, exc: BaseException) -> None:
        self.line(f"  {self.where()}: the call failed: {type(exc).__name__}: {str(exc)[:200]}")

    @staticmethod
    def where() -> str:
        return " ".join(part for part in (current_item.get(), current_step.get()) if part) or "model"


def model_activity() -> str:
    """What this process's embedded model server is doing ('' when none runs or it is idle)."""
    from envscaler_mcp.providers.local.server import activity_line

    return activity_line()


class ReportingProvider:
    """A provider that reports each call's start and end to a RunLog, and every `heartbeat_s` of a call still
    running, what the embedded model is doing (reading the prompt, generating); the rest is the wrapped one's."""

    def __init__(self, inner: Provider, log: RunLog, heartbeat_s: float = 60.0) -> None:
        self.inner = inner
        self.log = log
        self.spec = inner.spec
        self.heartbeat_s = heartbeat_s

    async def complete(self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
                       settings: GenerationSettings | None = None) -> AssistantTurn:
        self.log.call_started(self.spec)
        started = time.monotonic()
        call = asyncio.ensure_future(self.inner.complete(list(messages), list(tools) if tools is not None else None,
                                                         settings))
        try:
            while not (await asyncio.wait({call}, timeout=self.heartbeat_s))[0]:
                activity = model_activity()
                self.log.line(f"  {RunLog.where()}: still waiting ({duration(time.monotonic() - started)}"
                              + (f"; {activity})" if activity else ")"))
            turn = call.result()
        except BaseException as exc:
            if not call.done():  # cancelled (Ctrl-C, SIGTERM): the call goes too
                call.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.gather(call, return_exceptions=True)
            elif isinstance(exc, Exception):
                self.log.call_failed(exc)
            raise
        self.log.call_ended(turn)
        return turn

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
