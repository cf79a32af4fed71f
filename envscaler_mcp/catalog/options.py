"""The `--home` option shared by every command that reads the catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.catalog.paths import HOME_ENV, set_home


def _use_home(value: Path | None) -> Path | None:
    if value is not None:
        if not value.is_dir():
            raise typer.BadParameter(f"{value} is not a folder")
        set_home(value)
    return value


HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar=HOME_ENV,
        callback=_use_home,
        help="Data folder holding environments/ and scenarios/, e.g. the output of `import envscaler` "
        f"(default: ${HOME_ENV}, else the bundled catalog).",
    ),
]
