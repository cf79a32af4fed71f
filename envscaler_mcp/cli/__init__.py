"""The `envscaler-mcp` command line. Each stage registers its own commands; `eval`, which wires the harness
to the report stage, lives here (cli/eval.py); configuration is read here, at the edge."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from envscaler_mcp import __version__
from envscaler_mcp.errors import EnvScalerError, UsageError

app = typer.Typer(
    name="envscaler-mcp",
    help="Synthesize stateful tool environments, serve each as a standalone MCP server, and evaluate LLM agents on them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class _ExportGroup(TyperGroup):
    """`export`: a folder where a subcommand belongs is a run folder given the old way; say the new way."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and Path(args[0]).is_dir():
            raise UsageError(f"to export the run in '{args[0]}', write: envscaler-mcp export run "
                             f"{args[0]} --format openai|sharegpt")
        return super().resolve_command(ctx, args)


export_app = typer.Typer(cls=_ExportGroup, no_args_is_help=True,
                         help="Export environments and scenarios in EnvScaler's format, or a run's trajectories.")


def _register_all() -> None:
    from envscaler_mcp.catalog import cli as catalog_cli
    from envscaler_mcp.cli import eval as eval_cli
    from envscaler_mcp.interop import cli as interop_cli
    from envscaler_mcp.launch import cli as launch_cli
    from envscaler_mcp.providers import cli as providers_cli
    from envscaler_mcp.qa import cli as qa_cli
    from envscaler_mcp.render import cli as render_cli
    from envscaler_mcp.report import cli as report_cli
    from envscaler_mcp.synth import cli as synth_cli

    for module in (catalog_cli, qa_cli, interop_cli, render_cli, launch_cli,
                   providers_cli, eval_cli, report_cli, synth_cli):
        module.register(app)
    interop_cli.register_export(export_app)  # export envscaler
    report_cli.register_export(export_app)  # export run
    app.add_typer(export_app, name="export")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit()


_register_all()


def main() -> None:
    """Console-script entry point: run the app, turning known errors into a clear message and exit code."""
    try:
        app()
    except EnvScalerError as exc:
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        sys.exit(exc.exit_code)
