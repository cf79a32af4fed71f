"""CLI commands of the qa stage: `envscaler-mcp scenarios check`."""

from __future__ import annotations

import json
import tempfile
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import typer
from rich.console import Console
from rich.table import Table

from envscaler_mcp import _interrupt
from envscaler_mcp._command import typed_command
from envscaler_mcp.errors import UsageError
from envscaler_mcp.qa.batch import GateSettings, Group, Item, StoredScenario, check_groups
from envscaler_mcp.qa.check_options import CheckOptions
from envscaler_mcp.qa.gate import StepStatus
from envscaler_mcp.qa.results import ResultsFile, Selection, Verdict
from envscaler_mcp.scenario.models import Scenario

scenarios_app = typer.Typer(help="Check scenario sets with the QA gate.", no_args_is_help=True)

_CELL: dict[StepStatus, str] = {"pass": "[green]pass[/]", "fail": "[bold red]FAIL[/]", "warn": "[yellow]warn[/]",
                                "skip": "[dim]skip[/]"}
_COUNTS = ("probes", "caught_by_validators", "caught_by_state_check_only", "skipped_free", "uncaught",
           "collateral_probes", "wrong_probes", "wrong_probes_uncaught", "wrong_probes_skipped",
           "given_wrong_solutions", "given_wrong_solutions_uncaught", "state_check_not_available", "scenarios",
           "scenarios_passed")  # the gate's totals (qa/results.py report_counts), in the order --json gives them


class RemoteGate(Protocol):
    """Where `--ray` runs the gate (adapters/ray_gate.py RayGate, wired by cli/scenarios.py)."""

    def connect(self) -> None: ...

    def run(self, items: list[tuple[Any, Item]], results: ResultsFile, settings: GateSettings) -> None: ...


RemoteFactory = Callable[[str, int | None], RemoteGate]  # (--ray address, --ray-workers) -> the runner
# (--workers N|auto, the scenarios to gate, the settings) -> local worker processes' runner, or None for this process
# (--workers, the scenarios listed with their headers when called, settings) -> the workers, or None for one process
LocalFactory = Callable[[str, Callable[[], list[tuple[Any, Item]]], GateSettings], RemoteGate | None]


class _Listed:
    """Counts what the lazily listed groups held: scenarios, and those without a reference solution."""

    def __init__(self) -> None:
        self.scenarios = self.missing = 0

    def add(self, scenarios: list[Scenario]) -> None:
        self.scenarios += len(scenarios)
        self.missing += sum(1 for sc in scenarios if not sc.has_reference())


def _stored(env: str, env_id: str, ids: set[str] | None, listed: _Listed) -> Callable[[], list[StoredScenario]]:
    """A function that lists an environment's scenarios as headers and lines (no initial state read); `env_id`:
    its skeleton's id, read once when the command starts."""
    def scenarios() -> list[StoredScenario]:
        from envscaler_mcp.catalog.store import scenario_headers, scenarios_path

        path = scenarios_path(env, env_id)
        found = scenario_headers(path, ids) if path.is_file() else []
        listed.add([header for header, _ in found])
        return [StoredScenario(path, header, line) for header, line in found]

    return scenarios


def _groups(envs: list[str], scenarios_file: Path | None, ids: list[str], listed: _Listed) -> list[Group]:
    from envscaler_mcp.catalog.store import (
        count_scenarios,
        get_skeleton,
        list_env_ids,
        load_scenarios,
        scenarios_path,
    )

    if scenarios_file is not None:
        loaded = load_scenarios(scenarios_file)
        if len(envs) > 1:
            raise UsageError("with --scenarios give at most one ENV (the server to check them on)")
        if envs:
            try:
                env_id = get_skeleton(envs[0]).id
            except UsageError:  # not in the catalog: launching it says what it is
                env_id = None
            other = sorted({sc.env_id for sc in loaded} - {env_id}) if env_id is not None else []
            if other:
                raise UsageError(f"{scenarios_file}: scenarios of {', '.join(other)} cannot be checked on {env_id}; "
                                 "give their own environment, or no ENV to check each on its own")
            by_env = {envs[0]: loaded}
        else:
            by_env = {}
            for sc in loaded:
                by_env.setdefault(sc.env_id, []).append(sc)
        kept = {env: [s for s in scs if not ids or s.id in ids] for env, scs in sorted(by_env.items())}
        groups: list[Group] = [(env, scs) for env, scs in kept.items() if scs]
        for scs in kept.values():
            listed.add(scs)
    else:  # listed when each environment's turn comes, each scenario read when its check starts
        names = envs or list_env_ids()
        if not names:
            raise UsageError("no environments found: name one, or pass --scenarios FILE")
        skeletons = [(env, get_skeleton(env).id) for env in names]  # every name checked before anything runs
        groups = [(env, _stored(env, env_id, set(ids) or None, listed)) for env, env_id in skeletons
                  if count_scenarios(scenarios_path(env, env_id))]
    if not groups:
        raise UsageError("no scenarios to check (check the ENV names, --scenarios and --id)")
    return groups


def _table(reports: list[Verdict], mutation: bool) -> Table:
    table = Table(title="Scenario QA gate")
    table.add_column("env", overflow="fold")
    table.add_column("scenario", no_wrap=True)
    for col in ("checks", "initial-false", "replay", "final-true"):
        table.add_column(col)
    wrong = any(r.counts["given_wrong_solutions"] for r in reports)
    if wrong:
        table.add_column("wrong")
    answers = any("answer_probes" in r.statuses for r in reports)
    if answers:
        table.add_column("answer probes")
    if mutation:
        table.add_column("mutation")
        table.add_column("probes")
    table.add_column("verdict")
    for r in reports:
        statuses = r.statuses
        initial = "fail" if "fail" in (statuses["initial_false"], statuses["validators"]) else statuses["initial_false"]
        row = [r.env_id, r.scenario_id, str(r.n_checks), _CELL[initial], _CELL[statuses["replay"]],
               _CELL[statuses["final_true"]]]
        if wrong:
            row.append(_CELL[statuses.get("wrong_solutions", "skip")])
        if answers:
            row.append(_CELL[statuses.get("answer_probes", "skip")])
        if mutation:
            row += [_CELL[statuses.get("mutation", "skip")], _CELL[statuses.get("wrong_probes", "skip")]]
        row.append("[green]ok[/]" if r.passed else "[bold red]rejected[/]")
        table.add_row(*row)
    return table


def check_command(options: CheckOptions) -> None:
    """Gate scenarios: validators return bools, fail on the initial state, pass after the reference solution,
    and fail after each of the scenario's wrong solutions."""
    settings = options.gate_settings()
    remote = _remote(options.ray, options.ray_workers)
    listed = _Listed()
    groups = _groups(options.envs or [], options.scenarios_file, options.ids or [], listed)
    results = ResultsFile(options.results_path, resume=options.resume) if options.results_path is not None else None
    selection = Selection(dict(results.judged) if results is not None else {})
    groups = selection.groups(groups)
    if remote is None and _local_factory and options.workers.strip() != "1":
        listing: list[list[tuple[Any, Item]]] = []  # listed only when more than one worker may run them

        def items() -> list[tuple[Any, Item]]:
            listing.append(_listed(groups))
            return listing[-1]

        remote = _local_factory[0](options.workers, items, settings)
        if listing:
            groups = _regrouped(listing[-1])
    with tempfile.TemporaryDirectory(prefix="envscaler-gate-") as scratch:
        # every report is appended to the results file (a temporary one without --results) as it is judged;
        # what is kept of each is its verdict, and --json reads the lines again one at a time
        stream = results or ResultsFile(Path(scratch) / "gate.jsonl", resume=False)
        if remote is not None:
            judged = _on_remote(remote, groups, stream, settings)
        else:
            _interrupt.run(lambda: check_groups(groups, settings, on_report=stream.append, keep=False))
            judged = stream.judged
        reports = selection.verdicts(judged)
        if not reports:
            raise UsageError("no scenarios to check (check the ENV names, --scenarios and --id)")
        _show(reports, stream, options, listed.missing)
    if any(not r.passed for r in reports):
        raise typer.Exit(1)


def _json_lines(reports: list[Verdict], stream: ResultsFile) -> Iterator[str]:
    """The reports' lines as one JSON array (as json.dumps(..., indent=2) prints it), a line at a time."""
    if not reports:
        yield "[]"
        return
    yield "["
    for n, r in enumerate(reports):
        text = textwrap.indent(json.dumps(stream.line(r), indent=2), "  ")
        yield text + ("," if n < len(reports) - 1 else "")
    yield "]"


def _show(reports: list[Verdict], stream: ResultsFile, options: CheckOptions, missing: int) -> None:
    """The reports as JSON on stdout (notes on stderr) or as the table with each scenario's reasons, the probe
    totals with --mutation, and what `missing` scenarios without a reference solution mean."""
    console = Console(stderr=options.as_json)
    if not console.is_terminal:  # piped output: wide enough for the table's ids and headers
        console = Console(stderr=options.as_json, width=130)
    if options.as_json:
        for text in _json_lines(reports, stream):
            typer.echo(text)
        if options.mutation:
            console.print(probe_summary(reports), markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(_table(reports, options.mutation))
        for r in reports:
            if r.reasons:
                mark = "[yellow]warnings[/]" if r.passed else "[bold red]rejected[/]"
                console.print(f"{mark} {r.env_id}/{r.scenario_id} {r.title}")
                for reason in r.reasons:
                    console.print(f"  - {reason}", markup=False, highlight=False)
        failed = sum(not r.passed for r in reports)
        if options.mutation:
            console.print(probe_summary(reports), markup=False, highlight=False, soft_wrap=True)
        console.print(f"{len(reports) - failed}/{len(reports)} scenarios passed the gate")
    if missing:
        console.print(no_reference_note(missing, len(reports), options.allow_no_reference), markup=False,
                      highlight=False, soft_wrap=True)


scenarios_app.command("check")(typed_command(CheckOptions, check_command))


def no_reference_note(missing: int, total: int, allowed: bool) -> str:
    """What it means that `missing` of `total` scenarios have no reference solution."""
    verdict = ("accepted on their validators alone (--allow-no-reference)" if allowed else
               "rejected (pass --allow-no-reference to accept them on their validators alone)")
    return (f"{missing} of {total} scenario(s) have no reference solution (EnvScaler's scenario files carry none): "
            f"nothing proves their tasks solvable, so they are {verdict}; the state check is not available for "
            "them, and `eval --agent oracle` refuses them.")


def probe_counts(reports: Sequence[Verdict]) -> dict[str, int]:
    """Totals of the mutation probes, the wrong-solution probes and the given wrong solutions over reports."""
    totals: Counter[str] = Counter()
    for r in reports:
        totals.update(r.counts)
    return {name: totals[name] for name in _COUNTS}


def probe_summary(reports: Sequence[Verdict]) -> str:
    """One line with the probe totals."""
    c = probe_counts(reports)
    return (f"mutation: {c['probes']} probes ({c['collateral_probes']} collateral): {c['caught_by_validators']} caught "
            f"by a validator, {c['caught_by_state_check_only']} by the state check only, {c['skipped_free']} of free "
            f"fields skipped, {c['uncaught']} uncaught; wrong-solution probes: {c['wrong_probes']} run, "
            f"{c['wrong_probes_uncaught']} passed the scoring, {c['wrong_probes_skipped']} could not be built; given "
            f"wrong solutions: {c['given_wrong_solutions']}, {c['given_wrong_solutions_uncaught']} not caught")


_remote_factory: list[RemoteFactory] = []  # set by register(app, remote=...)
_local_factory: list[LocalFactory] = []  # set by register(app, local=...)


def _listed(groups: list[Group]) -> list[tuple[Any, Item]]:
    """Every group's scenarios (headers and where their lines are: no initial state is read), in order."""
    return [(target, item) for target, scs in groups for item in (scs() if callable(scs) else scs)]


def _regrouped(items: list[tuple[Any, Item]]) -> list[Group]:
    """Listed scenarios as groups again, one per target, in their order."""
    groups: dict[Any, list[Item]] = {}
    for target, item in items:
        groups.setdefault(target, []).append(item)
    return list(groups.items())


def _remote(address: str | None, workers: int | None) -> RemoteGate | None:
    """The `--ray` runner, joined to its cluster before any work (None without --ray)."""
    if address is None:
        return None
    if not _remote_factory:
        raise UsageError("--ray is not available in this command line")
    remote = _remote_factory[0](address, workers)
    remote.connect()
    return remote


def _on_remote(remote: RemoteGate, groups: list[Group], stream: ResultsFile, settings: GateSettings
               ) -> dict[tuple[str, str], Verdict]:
    """Every group's scenarios judged by `remote`, their lines appended to `stream`; the verdicts of the whole
    file, read back from it."""
    remote.run(_listed(groups), stream, settings)
    return ResultsFile(stream.path, resume=True).judged


def register(app: typer.Typer, remote: RemoteFactory | None = None, local: LocalFactory | None = None) -> None:
    """Add this stage's commands to the main app (`remote`: the runner of --ray, `local`: of --workers, from a
    layer above)."""
    if remote is not None and not _remote_factory:
        _remote_factory.append(remote)
    if local is not None and not _local_factory:
        _local_factory.append(local)
    app.add_typer(scenarios_app, name="scenarios")
