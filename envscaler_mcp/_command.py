"""A command whose options are declared once, as the fields of a frozen dataclass: typer reads them from the
signature built here, and the command's body receives them as one typed object.

Typing and the standard library only: a command's `--help` and a bad option load no stage."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

Options = TypeVar("Options")


def command_signature(options: type[Any]) -> inspect.Signature:
    """The signature typer reads a command's options from: one keyword parameter per field of the `options`
    dataclass, with its annotation (the typer.Option or typer.Argument in it) and default (none: required)."""
    hints = get_type_hints(options, include_extras=True)
    return inspect.Signature([
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name],
                          default=inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(options)
    ])


def typed_command(options: type[Options], run: Callable[[Options], None]) -> Callable[..., None]:
    """The function typer registers for `run`: its parameters are the fields of `options`, its help `run`'s
    docstring; called, it builds the options object and hands it to `run`."""

    def command(**given: Any) -> None:
        run(options(**given))

    command.__name__, command.__doc__ = run.__name__, run.__doc__
    command.__signature__ = command_signature(options)  # type: ignore[attr-defined]  # typer reads it
    return command
