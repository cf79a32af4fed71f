"""The `envscaler-mcp` command line. Each stage registers its own commands; `eval`, which wires the harness
to the report stage, lives here (cli/eval.py); configuration is read here, at the edge.

A stage's commands are imported only when one of them runs: `--help` lists them from the table below, so
asking for help or running a light command does not pay for the MCP SDK, the providers and the harness.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import typer
from typer._click.core import Command, Context  # the click that typer bundles: what it raises and builds
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.exceptions import UsageError as ClickUsageError
from typer.core import TyperCommand, TyperGroup

from envscaler_mcp import __version__, _interrupt
from envscaler_mcp.errors import EnvScalerError, UsageError

# Every top-level command: the module whose `register(app)` adds it, and its one-line help (the first line
# of its docstring; tests/foundation/test_cli_lazy.py keeps the two in step). The order is the help's order.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("envscaler_mcp.catalog.cli", "List the catalog's environments with their tool and scenario counts."),
    "show": ("envscaler_mcp.catalog.cli",
             "Show one environment: summary, rules, tools with kinds and parameters, scenarios."),
    "render": ("envscaler_mcp.cli.render",
               "Render environments into standalone MCP servers (deterministic; one folder per environment)."),
    "cache": ("envscaler_mcp.render.cli", "Show or clean the cache of servers rendered on demand (eval, serve)."),
    "serve": ("envscaler_mcp.launch.cli", "Run an environment's MCP server in the foreground (no install needed)."),
    "install": ("envscaler_mcp.launch.cli",
                "Add an environment's server to a desktop client's MCP config (keeps a backup and other servers)."),
    "models": ("envscaler_mcp.providers.cli",
               "List the model providers, whether each is usable here, and the embedded local models' status."),
    "eval": ("envscaler_mcp.cli.eval",
             "Evaluate an agent on environments' scenarios; results, summary and HTML report go to the run folder."),
    "report": ("envscaler_mcp.report.cli", "Print a run's summary table and write its self-contained HTML report."),
    "view": ("envscaler_mcp.view.cli",
             "Browse run folders in a web browser (runs, episodes, evidence, comparisons; follows live runs)."),
    "catalog": ("envscaler_mcp.catalog.cli", "Build and inspect the bundled environment catalog."),
    "scenarios": ("envscaler_mcp.cli.scenarios", "Check scenario sets with the QA gate."),
    "import": ("envscaler_mcp.cli.importing", "Import environments and scenarios from other formats."),
    "synth": ("envscaler_mcp.synth.cli",
              "Synthesize environments (envs) and scenarios from a task corpus with an LLM."),
    "export": ("envscaler_mcp.cli", "Export environments and scenarios in EnvScaler's format, or a run's trajectories."),
}


class _ExportGroup(TyperGroup):
    """`export`: a folder where a subcommand belongs is a run folder given the old way; say the new way."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and Path(args[0]).is_dir():
            raise UsageError(f"to export the run in '{args[0]}', write: envscaler-mcp export run "
                             f"{args[0]} --format openai|sharegpt")
        return super().resolve_command(ctx, args)


def register(app: typer.Typer) -> None:
    """Add the `export` group (`export envscaler`, `export run`) to the main app."""
    from envscaler_mcp.interop import cli as interop_cli
    from envscaler_mcp.report import cli as report_cli

    export_app = typer.Typer(cls=_ExportGroup, no_args_is_help=True, help=COMMANDS["export"][1])
    interop_cli.register_export(export_app)  # export envscaler
    report_cli.register_export(export_app)  # export run
    app.add_typer(export_app, name="export")


def load_command(name: str) -> Command:
    """The click command `name`, built by importing the module that registers it."""
    holder = typer.Typer(pretty_exceptions_enable=False, add_completion=False)
    importlib.import_module(COMMANDS[name][0]).register(holder)
    group = typer.main.get_group(holder)
    command = group.commands[name]
    _literal_help(command)
    return command


def _literal_help(command: Command) -> None:
    """Make the help texts of `command` and its subcommands print as written: the rich help reads them as
    markup, where `pip install 'envscaler-mcp[ray]'` would lose its `[ray]` as an unknown style tag."""
    from rich.markup import escape

    command.help = escape(command.help) if command.help else command.help
    for param in command.params:
        if getattr(param, "help", None):
            param.help = escape(param.help)  # type: ignore[attr-defined]
    for sub in getattr(command, "commands", {}).values():
        _literal_help(sub)


class _LazyGroup(TyperGroup):
    """The root group: lists commands from `COMMANDS` and imports a command's module only to run it."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in COMMANDS:
            return None
        return TyperCommand(cmd_name, help=COMMANDS[cmd_name][1])  # enough for the help's listing

    def resolve_command(
        self, ctx: Context, args: list[str]
    ) -> tuple[str | None, Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name in COMMANDS:
            command = load_command(name)
        return name, command, rest


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


app = typer.Typer(
    cls=_LazyGroup,
    name="envscaler-mcp",
    help="Synthesize stateful tool environments, serve each as a standalone MCP server, and evaluate LLM agents on them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
    ),
) -> None:
    pass


def _first_known(group: BaseExceptionGroup[BaseException]) -> EnvScalerError | KeyboardInterrupt | None:
    """The first error of a task group's that the CLI knows how to say in one line (a Ctrl-C first)."""
    interrupted, rest = group.split(KeyboardInterrupt)
    if interrupted is not None:
        return KeyboardInterrupt()
    known: BaseException | None = (rest or group).split(EnvScalerError)[0]
    while isinstance(known, BaseExceptionGroup):
        known = known.exceptions[0]
    return known if isinstance(known, EnvScalerError) else None


def main(args: list[str] | None = None) -> None:
    """Console-script entry point: run the app; a user error (a bad option, file or setting) ends with one
    line on stderr and exit code 2, other known errors with their own code."""
    _interrupt.install()
    try:
        code = app(args=args, standalone_mode=False)
    except NoArgsIsHelpError as exc:  # the help (rich help is printed while it is built)
        if exc.format_message().strip():
            typer.echo(exc.format_message(), err=True)
        sys.exit(2)
    except ClickException as exc:
        hint = ""
        if isinstance(exc, ClickUsageError) and exc.ctx is not None:
            hint = f" (see `{exc.ctx.command_path} --help`)"
        typer.secho(f"error: {exc.format_message()}{hint}", fg=typer.colors.RED, err=True)
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except EnvScalerError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        sys.exit(exc.exit_code)
    except BaseExceptionGroup as group:  # concurrent work ended by a known error: say that one
        known = _first_known(group)
        if known is None:
            raise
        if isinstance(known, KeyboardInterrupt):
            typer.echo("aborted", err=True)
            sys.exit(130)
        typer.secho(f"error: {known}", fg=typer.colors.RED, err=True)
        sys.exit(known.exit_code)
    except OSError as exc:  # a path the user gave that cannot be read or written
        if exc.filename is None:
            raise
        typer.secho(f"error: {exc.filename}: {exc.strerror}", fg=typer.colors.RED, err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
