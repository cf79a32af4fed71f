"""The options of `import envscaler`, declared once: a typed dataclass whose fields are the command's options
(typer reads them through envscaler_mcp/_command.py), and the one place they are checked.

Typing and typer only at import time: `import envscaler --help` and a bad choice load no stage (the choices are
envscaler_mcp/_choices.py's Transport and _outcome.py's ConventionChoice, which the stages use too)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp._choices import Transport
from envscaler_mcp._outcome import ConventionChoice
from envscaler_mcp.errors import InputFileError


@dataclasses.dataclass(frozen=True)
class ImportOptions:
    """What `import envscaler` was given: one field per option, in the order `--help` lists them."""

    envs: Annotated[
        Path, typer.Option("--envs", help="EnvScaler env metadata JSON (object keyed by env_id, or list).")
    ]
    scenarios: Annotated[
        Path | None,
        typer.Option("--scenarios", help="EnvScaler scenario metadata JSON (a list of task items)."),
    ] = None
    out: Annotated[Path, typer.Option("--out", help="Output data folder.")] = Path(".")
    skip_checks: Annotated[
        bool,
        typer.Option(
            "--skip-checks", help="Import environments that fail the static checks (problems become notes). "
            "Without it, problems the OS layers contain are warnings when the layers are on here."
        ),
    ] = False
    trajectories: Annotated[
        Path | None,
        typer.Option("--trajectories", help="EnvScaler trajectories (SFT items or rollout records, a JSON list "
                     "or JSONL): each matching scenario gets the tool calls as its reference solution once a "
                     "replay reproduces them."),
    ] = None
    transport: Annotated[Transport, typer.Option(help="How to run the servers that replay trajectories.")] = "http"
    success_convention: Annotated[
        ConventionChoice,
        typer.Option("--success-convention", help="How the environments' tools report a failed call: envscaler "
                     "(a result without \"success\": true failed), error-field (a 'success' field when present, "
                     "else a non-empty 'error' field), no-error (only a raised error); auto: envscaler when the "
                     "code answers a 'success' key, else error-field."),
    ] = "auto"
    coerce_arguments: Annotated[
        bool, typer.Option("--coerce-arguments", help="Convert a trajectory call's arguments that do not fit the "
                           "tool's schema when that is lossless ('001' -> 1, '2.5' -> 2.5, 'true' -> true); each "
                           "conversion is noted in the scenario's provenance.")
    ] = False
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Print every finding kept in provenance, not the first few.")
    ] = False

    def check(self) -> None:
        """The checks the options' types cannot make, before anything is written: a trajectories file that is
        not one is an InputFileError (one line)."""
        if self.trajectories is not None and not self.trajectories.is_file():
            raise InputFileError(self.trajectories, "file not found" if not self.trajectories.exists() else "not a file")
