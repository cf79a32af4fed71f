"""The options of `scenarios check`, declared once: a typed dataclass whose fields are the command's arguments
and options (typer reads them through envscaler_mcp/_command.py), and the one place they are checked and
turned into the gate's GateSettings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp._choices import Transport, parse_workers
from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError
from envscaler_mcp.qa.batch import GateSettings


@dataclasses.dataclass(frozen=True)
class CheckOptions:
    """What `scenarios check` was given: one field per argument or option, in the order `--help` lists them."""

    envs: Annotated[list[str] | None, typer.Argument(
        help="Environment ids or skeleton paths (default: every bundled one).")] = None
    scenarios_file: Annotated[Path | None, typer.Option("--scenarios", help="Scenario set (JSONL) to check.")] = None
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these scenario ids (repeatable).")] = None
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON instead of a table.")] = False
    mutation: Annotated[bool, typer.Option("--mutation", help="Also report changed fields no validator guards.")] = False
    allow_no_reference: Annotated[bool, typer.Option(
        "--allow-no-reference", help="Do not reject scenarios without a reference solution.")] = False
    transport: Annotated[Transport, typer.Option(help="How to run the server (pipe: over its stdin/stdout, as eval "
                                                 "does).")] = "pipe"
    timeout: Annotated[float, typer.Option(min=0.01, help="Seconds each validator may run.")] = 2.0
    validator_workers: Annotated[int, typer.Option("--validator-workers", min=1,
                                                   help="Validator worker processes (per gate worker).")] = 2
    workers: Annotated[str, typer.Option("--workers", metavar="N|auto", help="Gate worker processes the scenarios "
                                         "are spread over, each with its own servers and validator sandbox "
                                         "(--concurrency is their total). auto: one per CPU for a gate big enough "
                                         "to repay their start-up and of small scenarios, else 1.")] = "auto"
    concurrency: Annotated[int, typer.Option(min=1, help="Scenarios replayed at the same time in all (fewer while "
                                             "their lines in flight would pass 2 MB).")] = GateSettings.concurrency
    servers: Annotated[int, typer.Option(min=1, help="Environments gated at the same time, one server each (started "
                                         "when its turn comes, stopped when its scenarios are done).")] = 2
    results_path: Annotated[Path | None, typer.Option("--results", help="Stream the reports to this JSONL file, one "
                                                      "line per scenario as it is judged (see --resume).")] = None
    resume: Annotated[bool, typer.Option("--resume", help="Judge only the scenarios without a line in --results; "
                                         "the report covers them all.")] = False
    ray: Annotated[str | None, typer.Option("--ray", metavar="auto|local|ADDR", help="Judge the scenarios on Ray "
                                            "workers: 'auto' joins the running cluster, 'local' starts a private one, "
                                            "or a head's address; --concurrency is then per worker (docs/ray.md).")
                   ] = None
    ray_workers: Annotated[int | None, typer.Option("--ray-workers", min=1,
                                                    help="Ray workers (default: the cluster's CPUs).")] = None
    home: HomeOption = None

    def gate_settings(self) -> GateSettings:
        """The gate's settings, after the checks the options' types cannot make; a contradiction is a
        UsageError (one line, exit 2)."""
        if self.resume and self.results_path is None:
            raise UsageError("--resume continues a --results FILE: give the file")
        if self.ray is None and self.ray_workers is not None:
            raise UsageError("--ray-workers needs --ray")
        try:
            parse_workers(self.workers)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if self.ray is not None and self.workers.strip().lower() != "auto":
            raise UsageError("--workers spreads the gate over this machine's processes; with --ray use --ray-workers")
        return GateSettings(transport=self.transport, timeout_s=self.timeout, workers=self.validator_workers,
                            mutation=self.mutation, require_reference=not self.allow_no_reference,
                            concurrency=self.concurrency, servers=self.servers)
