"""What the local model is doing right now (for the progress line) and how fast it has been (for time limits).

The server's own numbers feed both: llama.cpp streams `prompt_progress` (tokens of the prompt read so far)
while it reads a prompt, one chunk per generated token, and `timings` (prompt and generation tokens per
second) at the end of every request.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

# Until the server has measured anything: slow-machine guesses (a busy 2-core CPU), so the first limits are loose.
PRIOR_PROMPT_TOK_S = 8.0
PRIOR_GEN_TOK_S = 1.5
_SMOOTHING = 0.5


@dataclass
class ModelActivity:
    """The state of one local model server; thread-safe, read by the progress display."""

    state: str = "idle"  # idle | loading | restoring | reading | generating
    done: int = 0
    total: int = 0
    started: float = 0.0
    prompt_tok_s: float | None = None
    gen_tok_s: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set(self, state: str, done: int = 0, total: int = 0) -> None:
        """Enter a state (the clock restarts when the state changes)."""
        with self._lock:
            if state != self.state:
                self.started = time.monotonic()
            self.state, self.done, self.total = state, done, total

    def prompt_progress(self, progress: dict[str, Any]) -> None:
        """A llama.cpp `prompt_progress` event: {total, cache, processed, time_ms}."""
        total, cache = int(progress.get("total", 0)), int(progress.get("cache", 0))
        processed = int(progress.get("processed", 0))
        self.set("reading", max(0, processed - cache), max(0, total - cache))
        ms = float(progress.get("time_ms", 0) or 0)
        if ms > 2000 and processed - cache > 0:  # a running measure on long prompts
            self._blend("prompt_tok_s", (processed - cache) * 1000.0 / ms)

    def token(self) -> None:
        """One more generated token."""
        with self._lock:
            if self.state != "generating":
                self.state, self.done, self.started = "generating", 0, time.monotonic()
            self.done += 1

    def timings(self, timings: dict[str, Any]) -> None:
        """The `timings` of a finished request: fold its speeds into the running measure."""
        if float(timings.get("prompt_n", 0) or 0) >= 16 and timings.get("prompt_per_second"):
            self._blend("prompt_tok_s", float(timings["prompt_per_second"]))
        if float(timings.get("predicted_n", 0) or 0) >= 4 and timings.get("predicted_per_second"):
            self._blend("gen_tok_s", float(timings["predicted_per_second"]))

    def _blend(self, name: str, value: float) -> None:
        with self._lock:
            old = getattr(self, name)
            setattr(self, name, value if old is None else _SMOOTHING * old + (1 - _SMOOTHING) * value)

    def seconds_for(self, prompt_tokens: int, gen_tokens: int) -> float:
        """Expected seconds to read `prompt_tokens` and write `gen_tokens` at the measured (or prior) speed."""
        pp = self.prompt_tok_s or PRIOR_PROMPT_TOK_S
        tg = self.gen_tok_s or PRIOR_GEN_TOK_S
        return prompt_tokens / pp + gen_tokens / tg

    def describe(self) -> str:
        """One short line: 'local model: reading the prompt 512/1480 tokens (31 tok/s)', '' when idle."""
        with self._lock:
            state, done, total, started = self.state, self.done, self.total, self.started
            pp, tg = self.prompt_tok_s, self.gen_tok_s
        elapsed = time.monotonic() - started
        if state == "loading":
            return f"local model: loading ({elapsed:.0f} s)"
        if state == "restoring":
            return "local model: restoring the cached prompt"
        if state == "reading":
            speed = f", {pp:.0f} tok/s" if pp else ""
            return f"local model: reading the prompt {done}/{total} tokens{speed}"
        if state == "generating":
            rate = done / elapsed if elapsed > 0.5 and done else tg
            speed = f", {rate:.1f} tok/s" if rate else ""
            return f"local model: generating {done} tokens{speed}"
        return ""
