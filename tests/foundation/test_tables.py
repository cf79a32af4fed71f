"""`list` and `show` fit the terminal: ids whole at any width, low-value columns left out and named."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from envscaler_mcp._tables import Col, fit_table
from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir
from envscaler_mcp.cli import app
from tests.tables import assert_fits, left_out, render

runner = CliRunner()
LONG = "hospital_appointment_scheduling_system"  # the bundled catalog's longest id


def _ids() -> list[str]:
    return sorted(p.name for p in environments_dir().iterdir() if (p / "skeleton.json").is_file())


def _run(args: list[str], width: int) -> str:
    result = runner.invoke(app, args, env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("width", [80, 120])
def test_list_shows_every_id_whole(width: int) -> None:
    output = _run(["list"], width)
    assert LONG in _ids()
    assert_fits(output, width, _ids(), ["id", "name", "tools", "queries", "scenarios", "origin"],
                droppable=["queries", "origin"])
    assert ("origin" in left_out(output)) == (width == 80)  # 120 columns hold every column


@pytest.mark.parametrize("env", ["clinic_appointments", LONG])
@pytest.mark.parametrize("width", [80, 120])
def test_show_shows_every_tool_and_scenario_id_whole(env: str, width: int) -> None:
    output = _run(["show", env], width)
    skeleton = json.loads((environments_dir() / env / "skeleton.json").read_text())
    scenarios = [json.loads(line)["id"] for line in (scenarios_dir() / f"{env}.jsonl").read_text().splitlines()]
    assert skeleton["tools"] and scenarios
    assert_fits(output, width, [t["name"] for t in skeleton["tools"]] + scenarios,
                ["tool", "kind", "parameters", "summary", "title", "checks", "solution calls"],
                droppable=["summary", "solution calls"])


def test_a_table_too_wide_for_any_drop_names_its_long_ids_under_it() -> None:
    ids = ["environment_with_a_long_name", "short"]
    headers = ["environment", "episodes", "scored", "cost"]
    columns = [Col("environment", "id"), Col("episodes", justify="right"), Col("scored", justify="right"),
               Col("cost", drop=1)]
    rows = [[ids[0], "115", "110", "$1.00"], [ids[1], "3", "3", "$0.01"]]
    wide = render(fit_table(columns, rows, 120), 120)
    assert_fits(wide, 120, ids, headers)
    assert "#1" not in wide and not left_out(wide)  # room enough: the ids stay in their column
    # 40 columns: no drop makes the ids fit, keys do, and then the cost fits again
    narrow = render(fit_table(columns, rows, 40), 40)
    assert_fits(narrow, 40, ids, headers)
    assert "#1 " + ids[0] in narrow and "#2" not in narrow and not left_out(narrow)
    # 32 columns: keys, and the cost left out
    narrower = render(fit_table(columns, rows, 32), 32)
    assert_fits(narrower, 32, ids, headers, droppable=["cost"])
    assert "#1 " + ids[0] in narrower and left_out(narrower) == {"cost"}


def test_cells_are_text_not_markup() -> None:
    table = fit_table([Col("id", "id"), Col("note", "text")], [["sc-[bold]1", "pip install 'x[ray]'"]], 80)
    output = render(table, 80)
    assert "sc-[bold]1" in output and "x[ray]" in output


def test_the_widest_rows_measure_as_the_whole_table() -> None:
    """fit_table measures only the rows that decide each column's width (_tables._widest_rows): the narrowest
    layout of those rows is the whole table's, whatever the cells (long ids, prose with long words, several
    lines, wide characters, empty cells), so the same columns are left out as when every row was measured."""
    import random

    from envscaler_mcp._tables import _build, _narrowest, _widest_rows

    rng = random.Random(7)
    pieces = ["a", "id_" * 3, "a b c d e f g h i j k l m n o p", "supercalifragilistic", "line\nbreak here",
              "日本語", "", "12.5%", "x" * 25, "two  spaces", "abcdefghijklm"]
    columns = [Col("environment", "id"), Col("prose", "text", drop=2), Col("n", justify="right"),
               Col("wide", "text", drop=1), Col("value", drop=3)]
    for _ in range(200):
        rows = [[" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 3))) for _ in columns]
                for _ in range(rng.randint(1, 60))]
        sample = [rows[n] for n in _widest_rows(rows)]
        assert len(sample) <= 2 * len(columns)
        shown = sorted(rng.sample(range(len(columns)), rng.randint(1, len(columns))))
        whole = _narrowest(_build(columns, rows, shown, "t", [None] * len(rows), measuring=True))
        part = _narrowest(_build(columns, sample, shown, "t", [None] * len(sample), measuring=True))
        assert part == whole


def test_many_rows_are_drawn_as_rich_draws_them() -> None:
    """fit_rows (`list`) draws the rows itself in the widths rich lays out for the rows that decide them: the
    same text and styles as fit_table's table, at any width, with wrapped prose, wide characters, dropped
    columns, and the fallbacks (ids made keys, cells with line breaks)."""
    import io
    import random

    from rich.console import Console

    from envscaler_mcp._tables import _DrawnRows, fit_rows

    def drawn(renderable: object, width: int, terminal: bool) -> str:
        out = io.StringIO()
        Console(file=out, width=width, force_terminal=terminal, color_system="standard" if terminal else None
                ).print(renderable)
        return out.getvalue()

    rng = random.Random(11)
    pieces = ["a", "clinic_appointments_s12", "a b c d e f g h i j k l m n o p", "supercalifragilistic", "日本語",
              "", "12.5%", "x" * 25, "two  spaces", "Front desk of a multi-specialty outpatient clinic:"]
    columns = [Col("id", "id"), Col("name", "text"), Col("tools", justify="right"), Col("queries", drop=2,
               justify="right"), Col("origin", "text", drop=1)]
    ours = 0
    for _ in range(100):
        rows = [[rng.choice(pieces[:2]) + str(n)] + [" ".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
                                                     for _ in columns[1:]] for n in range(rng.randint(1, 40))]
        if rng.random() < 0.05:
            rows[0][1] = "a line\nbreak"
        width, terminal = rng.choice([40, 60, 80, 120, 200, 240]), rng.random() < 0.5
        title = rng.choice([None, "Environments in /some/home"])
        fitted = fit_rows(columns, rows, width, title=title)
        assert drawn(fitted, width, terminal) == drawn(fit_table(columns, rows, width, title=title), width, terminal), \
            (rows, width)
        ours += isinstance(fitted, _DrawnRows) and not fitted.rich_drew_rows
    assert ours >= 25  # many tables had their rows drawn here, not by the fallbacks
