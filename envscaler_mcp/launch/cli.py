"""CLI commands of the launch stage: `serve` and `install`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.launch.install import ClientName


def serve_command(
    env: Annotated[str, typer.Argument(help="Environment id, server folder, or skeleton.json path.")],
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP (many episodes) instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8000,
    scenario: Annotated[str | None, typer.Option("--scenario", help="Start from a bundled scenario's initial state.")] = None,
    state: Annotated[Path | None, typer.Option("--state", help="Start from a state JSON file.")] = None,
    admin_token: Annotated[str | None, typer.Option("--admin-token", help="Bearer token of the HTTP admin API.")] = None,
    call_timeout: Annotated[float, typer.Option("--call-timeout", help="Seconds one tool call may run.")] = 10.0,
    max_memory_mb: Annotated[int | None, typer.Option("--max-memory-mb", help="Address-space limit of the server.")] = None,
) -> None:
    """Run an environment's MCP server in the foreground (no install needed)."""
    from envscaler_mcp.launch.target import resolve_target

    server = resolve_target(env)
    args = [sys.executable, "-m", server.package, "--call-timeout", str(call_timeout)]
    if http:
        args += ["--http", "--host", host, "--port", str(port)]
        if admin_token:
            args += ["--admin-token", admin_token]
    if scenario:
        args += ["--scenario", scenario]
    if state:
        args += ["--state", str(state.resolve())]
    if max_memory_mb:
        args += ["--max-memory-mb", str(max_memory_mb)]
    environ = dict(os.environ)
    environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(server.path), environ.get("PYTHONPATH")) if p)
    typer.echo(f"serving {server.path} ({'http' if http else 'stdio'})", err=True)
    sys.stderr.flush()
    os.execve(sys.executable, args, environ)


def install_command(
    env: Annotated[str, typer.Argument(help="Environment id, server folder, or skeleton.json path.")],
    client: Annotated[ClientName, typer.Option("--client", help="The desktop client.")],
    config: Annotated[Path | None, typer.Option("--config", help="Config file to edit (default: the client's usual one).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Server name in the config (default: the env id, dashed).")] = None,
    scenario: Annotated[str | None, typer.Option("--scenario", help="Start the server from this bundled scenario.")] = None,
) -> None:
    """Add an environment's server to a desktop client's MCP config (keeps a backup and other servers)."""
    from envscaler_mcp.launch.install import install_server, server_entry
    from envscaler_mcp.launch.target import resolve_target

    server = resolve_target(env)
    key = name or server.env_id.replace("_", "-")
    entry = server_entry(server, ["--scenario", scenario] if scenario else None)
    path, backup = install_server(client, key, entry, config)
    typer.echo(f"added '{key}' to {path}" + (f" (backup: {backup})" if backup else ""))
    typer.echo("restart the client to pick it up")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("serve")(serve_command)
    app.command("install")(install_command)
