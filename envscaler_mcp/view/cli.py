"""`envscaler-mcp view`: serve the run viewer on loopback until Ctrl-C."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.errors import UsageError


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def view_command(
    runs: Annotated[list[Path] | None, typer.Argument(
        help="Run folders, or folders holding run folders (default: ./runs).")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (loopback unless --allow-remote).")
                    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Listen on a non-loopback address: anyone who reaches it can read the runs.")] = False,
) -> None:
    """Browse run folders in a web browser (runs, episodes, evidence, comparisons; follows live runs)."""
    roots = list(runs or [Path("runs")])
    missing = [str(r) for r in roots if not r.exists()]
    if missing:
        raise UsageError(f"no such folder: {', '.join(missing)} (pass the folders `envscaler-mcp eval --out` wrote)")
    if not _loopback(host) and not allow_remote:
        raise UsageError(f"{host} is not a loopback address: the viewer shows every transcript it reads to anyone "
                         "who reaches it; pass --allow-remote to listen there anyway")
    if not 0 < port < 65536:
        raise UsageError(f"--port {port} is not a TCP port (1-65535)")
    import uvicorn

    from envscaler_mcp.view.app import create_app

    typer.echo(f"viewer: http://{host}:{port}/  (reading {', '.join(str(r) for r in roots)}; Ctrl-C stops)")
    server = uvicorn.Server(uvicorn.Config(create_app(roots), host=host, port=port, log_level="warning",
                                           lifespan="off"))
    server.run()
    if server.should_exit and not server.started:
        raise UsageError(f"could not listen on {host}:{port} (in use? pass --port)")
    typer.echo("viewer stopped")
    raise typer.Exit(130)


def register(app: typer.Typer) -> None:
    """Add `view` to the main app."""
    app.command("view")(view_command)
