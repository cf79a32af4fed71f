"""Tables that fit the terminal they are printed on, whatever its width (80 columns, a pipe, a log).

Identifiers (environment and scenario ids, tool names) are what a reader types next, so they are never
cut or wrapped; prose wraps at words; short values (counts, percentages) stay whole. When even the
narrowest layout is wider than the terminal, the columns of least value are left out, least valuable
first, and the table's caption names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

Kind = Literal["id", "text", "value"]


@dataclass(frozen=True)
class Col:
    """One column: its header, what its cells hold, and when it may be left out.

    kind: `id` (whole, on one line; the first column's ids may become keys named under the table), `text` (wraps at words), `value` (short, whole). drop: the rank in
    which the column is left out of a table too wide for the terminal (1 first); None keeps it always."""

    header: str
    kind: Kind = "value"
    drop: int | None = None
    justify: Literal["left", "right"] = "left"


def fit_table(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, *, title: str | None = None,
              row_styles: Sequence[str | None] | None = None) -> Table:
    """A table of `rows` (plain strings, never read as markup) no wider than `width` where it can be.

    Columns with a drop rank are left out, lowest rank first, while the table's narrowest layout (every
    id and value whole, prose wrapped at its longest word) is wider than `width`. When the table is still
    too wide and its first column holds ids, the ids longer than a short key become keys (#1, #2, ...)
    named in full under the table, and the columns are fitted again."""
    styles = list(row_styles or [None] * len(rows))
    table, left_out = _drop_until_fits(columns, rows, width, title, styles)
    legend: list[str] = []
    if left_out is None and columns and columns[0].kind == "id":
        keyed, legend = _keyed(rows)
        table, left_out = _drop_until_fits(columns, keyed, width, title, styles)
    notes = legend + ([f"left out at this width ({width} columns): {', '.join(left_out)}."] if left_out else [])
    if notes:
        table.caption = Text("\n".join(notes))
        table.caption_justify = "left"
    return table


def _drop_until_fits(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, title: str | None,
                     styles: list[str | None]) -> tuple[Table, list[str] | None]:
    """The table with the fewest columns left out that fits `width`, and their headers (None: it does not
    fit even with every droppable column left out; that table is returned)."""
    shown = list(range(len(columns)))
    droppable = [i for _, i in sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)]
    sample = [rows[n] for n in _widest_rows(rows)]
    while _narrowest(_build(columns, sample, shown, title, [None] * len(sample), measuring=True)) > width:
        if not droppable:
            return _build(columns, rows, shown, title, styles), None
        shown.remove(droppable.pop(0))
    return _build(columns, rows, shown, title, styles), [c.header for i, c in enumerate(columns) if i not in shown]


_WORD = 20  # the widest a word of prose may make its column in the narrowest layout
_KEY_WIDTH = 8  # ids this short stay in the table as they are; longer ones become keys in a narrow layout


def _keyed(rows: Sequence[Sequence[str]]) -> tuple[list[list[str]], list[str]]:
    """The rows with each long id of the first column replaced by a key, and the lines naming each key."""
    keyed: list[list[str]] = []
    legend: list[str] = []
    for row in rows:
        cells = list(row)
        if len(cells[0]) > _KEY_WIDTH:
            key = f"#{len(legend) + 1}"
            legend.append(f"{key} {cells[0]}")
            cells[0] = key
        keyed.append(cells)
    return keyed, legend


def _build(columns: Sequence[Col], rows: Sequence[Sequence[str]], shown: list[int], title: str | None,
           styles: list[str | None], *, measuring: bool = False) -> Table:
    """The table of the `shown` columns. `measuring`: prose columns count as at most _WORD wide (a longer
    word, a long enum in a parameter list, is folded rather than let widen the narrowest layout)."""
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False, collapse_padding=True)
    for i in shown:
        col = columns[i]
        longest = max([len(col.header), *(len(row[i]) for row in rows)])
        options: dict[str, Any] = {"justify": col.justify, "min_width": len(col.header), "overflow": "fold"}
        if col.kind != "text":  # whole: as wide as its longest cell (fold only if the terminal is narrower)
            options.update(no_wrap=True, min_width=longest)
        elif measuring:
            options.update(max_width=max(len(col.header), _WORD))
        table.add_column(Text(col.header), **options)
    for row, style in zip(rows, styles, strict=True):
        table.add_row(*(Text(row[i]) for i in shown), style=style)
    return table


def _widest_rows(rows: Sequence[Sequence[str]]) -> list[int]:
    """The rows that decide the table's narrowest layout: for each column, the one with its longest cell and the
    one with its widest word (rich's narrowest layout of a column is as wide as the widest word of its cells, and
    `_build` makes an id or value column as wide as its longest cell). Measuring only these gives the whole
    table's measure, with at most two rows per column; a run over 1,000 environments has a row each."""
    chosen: set[int] = set()
    for i in range(len(rows[0]) if rows else 0):
        for width in (len, _widest_word):
            chosen.add(max(range(len(rows)), key=lambda n: width(rows[n][i])))
    return sorted(chosen)


def _widest_word(text: str) -> int:
    words = text.split()
    return max(cell_len(word) for word in words) if words else max((cell_len(ln) for ln in text.splitlines()), default=0)


def _narrowest(table: Table) -> int:
    """The fewest columns `table` needs with every id and value whole and its prose wrapped."""
    console = Console(width=100_000)  # room for any layout: the minimum is not capped by the terminal's width
    return Measurement.get(console, console.options, table).minimum


__all__ = ["Col", "Kind", "fit_table"]
