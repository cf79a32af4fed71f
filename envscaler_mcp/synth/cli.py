"""CLI commands of the synth stage: `envscaler-mcp synth envs` (SkelBuilder), later `synth scenarios`."""

from __future__ import annotations

import typer

synth_app = typer.Typer(
    name="synth",
    help="Synthesize environments (envs) and scenarios from a task corpus with an LLM.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the `synth` command group to the main app. Each sub-pipeline has a `cli.py` with
    `register(synth_app)` adding its command; list it here (SkelBuilder: `envs`; ScenGenerator: `scenarios`)."""
    from envscaler_mcp.synth.scen import cli as scen_cli
    from envscaler_mcp.synth.skel import cli as skel_cli

    for module in (skel_cli, scen_cli):
        module.register(synth_app)
    app.add_typer(synth_app, name="synth")
