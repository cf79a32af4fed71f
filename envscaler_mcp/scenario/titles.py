"""Titles for scenarios that come without one (EnvScaler's scenarios have only a task): the task's first
sentence, cut at a word when it is long. Derived at import, and on display for scenarios imported before."""

from __future__ import annotations

import re

TITLE_MAX = 72
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")


def title_from_task(task: str, limit: int = TITLE_MAX) -> str:
    """The first sentence of `task` (its end punctuation dropped), at most `limit` characters: a longer one
    is cut at the last whole word that fits and ends with '…'."""
    first = _SENTENCE_END.split(task.strip(), maxsplit=1)[0].strip()
    first = " ".join(first.split())
    if len(first) <= limit:
        return first[:-1] if first.endswith(".") and not first.endswith("..") else first
    cut = first[: limit - 1]
    if " " in cut and not first[limit - 1].isspace():
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def shown_title(title: str, task: str) -> str:
    """What lists show for a scenario: its title, else one derived from its task."""
    return title or title_from_task(task)


__all__ = ["TITLE_MAX", "shown_title", "title_from_task"]
