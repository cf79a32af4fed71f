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
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
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
        _caption(table, notes)
    return table


def _caption(table: Table, notes: list[str]) -> None:
    table.caption = Text("\n".join(notes))
    table.caption_justify = "left"


def _drop_until_fits(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, title: str | None,
                     styles: list[str | None]) -> tuple[Table, list[str] | None]:
    """The table with the fewest columns left out that fits `width`, and their headers (None: it does not
    fit even with every droppable column left out; that table is returned)."""
    shown, fits = _shown(columns, rows, width, title)
    table = _build(columns, rows, shown, title, styles)
    return table, [c.header for i, c in enumerate(columns) if i not in shown] if fits else None


def _shown(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, title: str | None
           ) -> tuple[list[int], bool]:
    """The columns of the fewest left out that make the table fit `width`, and whether it fits then (if not,
    every droppable one is left out); measured on the rows that decide the narrowest layout."""
    shown = list(range(len(columns)))
    droppable = [i for _, i in sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)]
    sample = [rows[n] for n in _widest_rows(rows)]
    while _narrowest(_build(columns, sample, shown, title, [None] * len(sample), measuring=True)) > width:
        if not droppable:
            return shown, False
        shown.remove(droppable.pop(0))
    return shown, True


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


def fit_rows(columns: Sequence[Col], rows: Sequence[Sequence[str]], width: int, *, title: str | None = None
             ) -> RenderableType:
    """fit_table for many rows (`list` of 1,000 environments), drawn the same: rich lays out and draws the title,
    the header and the rows that decide the columns' widths (_widest_rows), and every row is drawn as padded
    text in those widths, a cell wider than its column wrapped by rich's Text.wrap (rich measured and drew every
    cell: about 1 s for 1,000 rows). A table that needs keys for its ids, or cells with line breaks: fit_table's."""
    shown, fits = _shown(columns, rows, width, title) if rows else ([], False)
    if not fits or any("\n" in cell for row in rows for cell in row):
        return fit_table(columns, rows, width, title=title)
    return _DrawnRows(columns, rows, shown, width, title)


class _DrawnRows:
    """The table of fit_rows (see there)."""

    def __init__(self, columns: Sequence[Col], rows: Sequence[Sequence[str]], shown: list[int], width: int,
                 title: str | None) -> None:
        self.columns, self.rows, self.shown, self.width, self.title = columns, rows, shown, width, title
        self.rich_drew_rows = False  # set when the layout was not the one drawn here (rich then draws every row)

    def _table(self, rows: Sequence[Sequence[str]]) -> Table:
        table = _build(self.columns, rows, self.shown, self.title, [None] * len(rows))
        left_out = [c.header for i, c in enumerate(self.columns) if i not in self.shown]
        if left_out:
            _caption(table, [f"left out at this width ({self.width} columns): {', '.join(left_out)}."])
        return table

    def _lines(self, console: Console, row: Sequence[str], widths: list[int]) -> list[str]:
        cells = []
        for i, w in zip(self.shown, widths, strict=True):
            text, justify = row[i], self.columns[i].justify
            plain = cell_len(text) <= w and text == text.strip() and text.isprintable()
            parts = [text] if plain else \
                [line.plain for line in Text(text).wrap(console, w, justify=justify, overflow="fold")]
            cells.append([p + " " * (w - cell_len(p)) if justify == "left" else " " * (w - cell_len(p)) + p
                          for p in parts])
        height = max(len(c) for c in cells)
        return [" " + "  ".join(c[n] if n < len(c) else " " * w for c, w in zip(cells, widths, strict=True)) + " "
                for n in range(height)]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width != self.width:  # printed on a console of another width than it was fitted to
            self.rich_drew_rows = True
            yield fit_table(self.columns, self.rows, options.max_width, title=self.title)
            return
        sample = [self.rows[n] for n in _widest_rows([[r[i] for i in self.shown] for r in self.rows])]
        table = self._table(sample)
        # as Table.__rich_console__ works them out: each with its right padding, but the last's
        widths = table._calculate_column_widths(console, options.update_width(options.max_width - table._extra_width))
        widths = [w - 1 for w in widths[:-1]] + widths[-1:]
        lines = console.render_lines(table, options, pad=False)
        drawn = ["".join(segment.text for segment in line) for line in lines]
        mine = [line for row in sample for line in self._lines(console, row, widths)]
        head = next((h for h in range(len(drawn)) if drawn[h:h + len(mine)] == mine), None)
        if head is None:  # not the layout drawn here: rich draws every row
            self.rich_drew_rows = True
            yield self._table(self.rows)
            return
        for line in lines[:head]:  # the title, the top edge, the header and its rule, in their styles
            yield from [*line, Segment.line()]
        for row in self.rows:
            yield Segment("\n".join(self._lines(console, row, widths)) + "\n")
        for line in lines[head + len(mine):]:  # the bottom edge, the caption
            yield from [*line, Segment.line()]


__all__ = ["Col", "Kind", "fit_rows", "fit_table"]
