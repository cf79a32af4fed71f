"""Checks shared by the tests of tables printed to a terminal (list, show, the eval and report summary)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable

from rich.console import Console


def render(renderable: object, width: int) -> str:
    """What a console `width` columns wide that is not a terminal (a pipe, a log) prints for `renderable`."""
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=False).print(renderable)
    return out.getvalue()


def left_out(output: str) -> set[str]:
    """The headers the fitted tables in `output` say they left out at this width."""
    notes = re.findall(r"left\s+out\s+at\s+this\s+width\s+\(\d+\s+columns\):\s+(.*?)\.", output, re.DOTALL)
    return {header.strip() for note in notes for header in " ".join(note.split()).split(",")}


def assert_fits(output: str, width: int, ids: Iterable[str], headers: Iterable[str],
                droppable: Iterable[str] = ()) -> None:
    """Every line within `width`; every id whole on some line; every header shown, except droppable ones the
    table names as left out; nothing ellipsized."""
    lines = output.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    assert "…" not in output
    for ident in ids:
        assert any(re.search(rf"(?<![\w-]){re.escape(ident)}(?![\w-])", line) for line in lines), ident
    dropped = left_out(output)
    assert dropped <= set(droppable), dropped
    for header in headers:
        assert header in dropped or header in output, header
