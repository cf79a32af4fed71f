"""The evidence of one transcript check: what the helpers of transcript/checks.py found or missed.

The validator sandbox's batch process calls `begin` before each check and `take` after it; the helpers `note`
what decided their answer in between. Validators never reach this module: their view of `transcript_checks`
holds only that module's `__all__`.

Standard library only: the validator worker imports it before its limits apply.
"""

from __future__ import annotations

MAX_EVIDENCE = 20  # entries kept per check
MAX_TEXT = 300  # characters per entry

_recorded: list[str] = []


def begin() -> None:
    """Start recording the evidence of one check (anything left from an earlier one is dropped)."""
    _recorded.clear()


def take() -> list[str]:
    """The evidence recorded since `begin`, at most MAX_EVIDENCE entries; recording starts afresh."""
    out = _recorded[:MAX_EVIDENCE]
    _recorded.clear()
    return out


def note(text: str) -> None:
    """Record one entry (cut to MAX_TEXT characters); past MAX_EVIDENCE entries the rest are dropped."""
    if len(_recorded) < MAX_EVIDENCE:
        _recorded.append(text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "...")
