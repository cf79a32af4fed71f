"""One episode: an environment instance at a state, and the guarded tool call (timeout + rollback)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .journal import Journal

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any


class CallTimeout(BaseException):  # a BaseException so `except Exception` in env code cannot swallow it
    """Raised inside environment code when a call runs past its time limit."""


class CallOutcome:
    """What a tool call produced: the JSON text (of a dict, unless it is an error) and whether it is an error. The
    structured value is that text parsed, by the server when a request wants it (server.py). (A plain class:
    `dataclasses` would bring `inspect` into the episode zygote's start.)"""

    __slots__ = ("is_error", "rolled_back", "text")

    def __init__(self, text: str, is_error: bool, rolled_back: bool) -> None:
        self.text = text
        self.is_error = is_error
        self.rolled_back = rolled_back


def _raise_timeout(signum: int, frame: Any) -> None:
    raise CallTimeout()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise CallTimeout in the running code after `seconds` (SIGALRM; main thread only, else no limit)."""
    if not seconds or seconds <= 0 or not hasattr(signal, "setitimer") \
            or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    old_delay, old_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        # None means a handler installed outside Python: it cannot be restored from here
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if old_delay:  # someone else's timer was running: re-arm what is left of it
            left = max(old_delay - (time.monotonic() - start), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, old_interval)


class Episode:
    """An isolated environment instance. All state changes go through journaled containers."""

    def __init__(self, env_class: type, state_names: list[str], state: dict[str, Any],
                 episode_id: str = "default") -> None:
        self.episode_id = episode_id
        self.state_names = list(state_names)
        self.created_at = time.time()
        self.calls = 0
        self.journal = Journal()  # this episode's undo log: its state's containers and instance report to it
        try:
            self.env = self.journal.instance(env_class)
        except TypeError:  # EnvScaler-style `__init__(self, init_config)`: hand it a copy of the state
            self.env = self.journal.instance(env_class, json.loads(json.dumps(state)))
        for name, value in state.items():
            object.__setattr__(self.env, name, self.journal.wrap(value))
        for name in self.state_names:
            if name in self.env.__dict__:
                object.__setattr__(self.env, name, self.journal.wrap(self.env.__dict__[name]))
        self._extra = [k for k in state if k not in self.state_names]

    def state_view(self) -> dict[str, Any]:
        """The live state (journaled containers; do not mutate)."""
        names = self.state_names + self._extra
        return {n: self.env.__dict__[n] for n in names if n in self.env.__dict__}

    def get_state(self) -> dict[str, Any]:
        """A plain deep copy of the state, as JSON would carry it (the same value every transport returns)."""
        return dict(json.loads(self.state_json()))

    def state_json(self) -> str:
        """The state as JSON text."""
        return json.dumps(self.state_view(), ensure_ascii=False)

    async def run(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """`call`, as the server awaits it (an episode in a process of its own answers asynchronously)."""
        return self.call(name, arguments, timeout)

    async def read_state_json(self) -> str:
        """`state_json`, as the server awaits it."""
        return self.state_json()

    def close(self) -> None:
        """Nothing to release: the episode lives in the server's process."""

    def call(self, name: str, arguments: dict[str, Any], timeout: float | None) -> CallOutcome:
        """Run one tool method. Exceptions, timeouts and `{"success": False}` roll the state back."""
        self.calls += 1
        method = getattr(self.env, name)
        journal = self.journal
        journal.begin()
        try:
            with deadline(timeout):
                value = method(**arguments)
            if not isinstance(value, dict):
                value = {"result": value}
            text = json.dumps(value, ensure_ascii=False)
        except CallTimeout:
            journal.rollback()
            return _error(f"Tool '{name}' took longer than {timeout:g} s and was stopped; "
                          "the state was left unchanged.")
        except BaseException as exc:  # SystemExit, KeyboardInterrupt, GeneratorExit... are the tool's doing too
            journal.rollback()
            detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return _error(f"Tool '{name}' failed with {detail}. The state was left unchanged.")
        failed = value.get("success") is False
        if failed:
            journal.rollback()
        else:
            journal.commit()
        return CallOutcome(text=text, is_error=False, rolled_back=failed)


def _error(message: str) -> CallOutcome:
    return CallOutcome(text=message, is_error=True, rolled_back=True)
