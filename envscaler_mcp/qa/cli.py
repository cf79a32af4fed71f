"""CLI commands of the qa stage: `envscaler-mcp scenarios check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import anyio
import typer
from rich.console import Console
from rich.table import Table

from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch import Transport
from envscaler_mcp.qa.batch import Group, check_groups
from envscaler_mcp.qa.gate import GateReport, StepStatus
from envscaler_mcp.scenario.models import Scenario

scenarios_app = typer.Typer(help="Check scenario sets with the QA gate.", no_args_is_help=True)

_CELL: dict[StepStatus, str] = {"pass": "[green]pass[/]", "fail": "[bold red]FAIL[/]", "warn": "[yellow]warn[/]",
                                "skip": "[dim]skip[/]"}


def _groups(envs: list[str], scenarios_file: Path | None, ids: list[str]) -> list[Group]:
    from envscaler_mcp.catalog.store import list_env_ids, load_scenarios, scenarios_for

    if scenarios_file is not None:
        loaded = load_scenarios(scenarios_file)
        if len(envs) > 1:
            raise UsageError("with --scenarios give at most one ENV (the server to check them on)")
        if envs:
            groups = [(envs[0], loaded)]
        else:
            by_env: dict[str, list[Scenario]] = {}
            for sc in loaded:
                by_env.setdefault(sc.env_id, []).append(sc)
            groups = sorted(by_env.items())
    else:
        names = envs or list_env_ids()
        if not names:
            raise UsageError("no environments found: name one, or pass --scenarios FILE")
        groups = [(env, scenarios_for(env)) for env in names]
    if ids:
        groups = [(env, [s for s in scs if s.id in ids]) for env, scs in groups]
    groups = [(env, scs) for env, scs in groups if scs]
    if not groups:
        raise UsageError("no scenarios to check (check the ENV names, --scenarios and --id)")
    return groups


def _table(reports: list[GateReport], mutation: bool) -> Table:
    table = Table(title="Scenario QA gate")
    table.add_column("env", overflow="fold")
    table.add_column("scenario", no_wrap=True)
    for col in ("checks", "initial-false", "replay", "final-true"):
        table.add_column(col)
    wrong = any(r.wrong_solutions for r in reports)
    if wrong:
        table.add_column("wrong")
    if mutation:
        table.add_column("mutation")
    table.add_column("verdict")
    for r in reports:
        statuses = {s.name: s.status for s in r.steps}
        initial = "fail" if "fail" in (statuses["initial_false"], statuses["validators"]) else statuses["initial_false"]
        row = [r.env_id, r.scenario_id, str(r.n_checks), _CELL[initial], _CELL[statuses["replay"]],
               _CELL[statuses["final_true"]]]
        if wrong:
            row.append(_CELL[statuses.get("wrong_solutions", "skip")])
        if mutation:
            row.append(_CELL[statuses.get("mutation", "skip")])
        row.append("[green]ok[/]" if r.passed else "[bold red]rejected[/]")
        table.add_row(*row)
    return table


@scenarios_app.command("check")
def check_command(
    envs: Annotated[list[str] | None, typer.Argument(
        help="Environment ids or skeleton paths (default: every bundled one).")] = None,
    scenarios_file: Annotated[Path | None, typer.Option("--scenarios", help="Scenario set (JSONL) to check.")] = None,
    ids: Annotated[list[str] | None, typer.Option("--id", help="Only these scenario ids (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the reports as JSON instead of a table.")] = False,
    mutation: Annotated[bool, typer.Option("--mutation", help="Also report changed fields no validator guards.")] = False,
    allow_no_reference: Annotated[bool, typer.Option(
        "--allow-no-reference", help="Do not reject scenarios without a reference solution.")] = False,
    transport: Annotated[Transport, typer.Option(help="How to run the server.")] = "http",
    timeout: Annotated[float, typer.Option(help="Seconds each validator may run.")] = 2.0,
    workers: Annotated[int, typer.Option(help="Validator worker processes.")] = 2,
    concurrency: Annotated[int, typer.Option(help="Scenarios replayed at the same time on one server.")] = 4,
) -> None:
    """Gate scenarios: validators return bools, fail on the initial state, pass after the reference solution,
    and fail after each of the scenario's wrong solutions."""
    groups = _groups(envs or [], scenarios_file, ids or [])
    console = Console(stderr=as_json)
    if not console.is_terminal:  # piped output: wide enough for the table's ids and headers
        console = Console(stderr=as_json, width=130)
    reports = anyio.run(lambda: check_groups(groups, transport=transport, timeout_s=timeout, workers=workers,
                                             concurrency=concurrency, mutation=mutation, require_reference=not allow_no_reference))
    if as_json:
        typer.echo(json.dumps([{**r.model_dump(mode="json"), "passed": r.passed} for r in reports], indent=2))
    else:
        console.print(_table(reports, mutation))
        for r in reports:
            if r.reasons():
                mark = "[yellow]warnings[/]" if r.passed else "[bold red]rejected[/]"
                console.print(f"{mark} {r.env_id}/{r.scenario_id} {r.title}")
                for reason in r.reasons():
                    console.print(f"  - {reason}", markup=False, highlight=False)
        failed = sum(not r.passed for r in reports)
        console.print(f"{len(reports) - failed}/{len(reports)} scenarios passed the gate")
    if any(not r.passed for r in reports):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.add_typer(scenarios_app, name="scenarios")
