"""CLI commands of the launch stage: `serve` and `install`."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.isolation import limits
from envscaler_mcp.launch.install import ClientName


def serve_command(
    env: Annotated[str, typer.Argument(help="Environment id, server folder, or skeleton.json path.")],
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP (many episodes) instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTP port (0: any free port).")] = 8000,
    scenario: Annotated[str | None, typer.Option("--scenario", help="Start from a bundled scenario's initial state.")] = None,
    state: Annotated[Path | None, typer.Option("--state", help="Start from a state JSON file.")] = None,
    admin_token: Annotated[str | None, typer.Option("--admin-token", help="Bearer token of the HTTP admin API.")] = None,
    call_timeout: Annotated[float, typer.Option("--call-timeout", min=0.01, help="Seconds one tool call may run.")] = 10.0,
    max_memory_mb: Annotated[int, typer.Option("--max-memory-mb", min=16, help="Address-space limit of the server (MiB).")] = limits.MEMORY_MB,
    max_threads: Annotated[int, typer.Option("--max-threads", min=1, help="Most threads of the server.")] = limits.THREADS,
    max_cpu_s: Annotated[int, typer.Option("--max-cpu-s", min=1, help="CPU seconds the server process may use.")] = limits.CPU_S,
    home: HomeOption = None,
) -> None:
    """Run an environment's MCP server in the foreground (no install needed)."""
    from envscaler_mcp._io import read_json
    from envscaler_mcp.errors import UsageError
    from envscaler_mcp.launch.requirements import check_requirements
    from envscaler_mcp.launch.server_process import (
        ServerLimits,
        loopback_listener,
        server_command,
        server_env,
    )
    from envscaler_mcp.launch.target import resolve_target

    if state is not None and scenario:
        raise UsageError("--state and --scenario both say where the server starts: give one of them")
    server = resolve_target(env)
    check_requirements(server)
    if state is not None:
        read_json(state)  # a missing or malformed state file: one line naming it, before the server starts
    args = ["--call-timeout", str(call_timeout)]
    if http:
        if host in ("127.0.0.1", "localhost"):  # bound here: the confined server needs no network of its own
            listener = loopback_listener() if port == 0 else _bound(host, port)
            listener.set_inheritable(True)
            args += ["--http", "--listen-fd", str(listener.fileno())]
        else:
            typer.echo(f"note: serving on {host} needs the network: the server runs without the OS layers", err=True)
            args += ["--http", "--host", host, "--port", str(port)]
        if admin_token:
            args += ["--admin-token", admin_token]
    if scenario:
        args += ["--scenario", scenario]
    if state:
        args += ["--state", str(state.resolve())]
    command = server_command(server, Path(os.devnull), isolation=not http or host in ("127.0.0.1", "localhost"),
                             server_args=args, read=[state.resolve()] if state else [],
                             limits=ServerLimits(max_memory_mb, max_cpu_s, max_threads)).argv
    typer.echo(f"serving {server.path} ({'http' if http else 'stdio'})", err=True)
    sys.stderr.flush()
    os.execve(command[0], command, server_env(server))


def _bound(host: str, port: int) -> socket.socket:
    from envscaler_mcp.errors import UsageError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:  # the port is in use, or below 1024 for a normal user
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(1024)
    return sock


def install_command(
    env: Annotated[str, typer.Argument(help="Environment id, server folder, or skeleton.json path.")],
    client: Annotated[ClientName, typer.Option("--client", help="The desktop client.")],
    config: Annotated[Path | None, typer.Option("--config", help="Config file to edit (default: the client's usual one).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Server name in the config (default: the env id, dashed).")] = None,
    scenario: Annotated[str | None, typer.Option("--scenario", help="Start the server from this bundled scenario.")] = None,
    home: HomeOption = None,
) -> None:
    """Add an environment's server to a desktop client's MCP config (keeps a backup and other servers)."""
    from envscaler_mcp.launch.install import install_server, server_entry
    from envscaler_mcp.launch.requirements import check_requirements
    from envscaler_mcp.launch.target import resolve_target

    server = resolve_target(env)
    check_requirements(server)  # the entry runs the server with this Python
    if scenario:
        _check_bundled(server.path / server.package / "data" / "scenarios.json", scenario)
    key = name or server.env_id.replace("_", "-")
    entry = server_entry(server, ["--scenario", scenario] if scenario else None)
    done = install_server(client, key, entry, config)
    verb = "replaced the existing entry" if done.replaced else "added"
    typer.echo(f"{verb} '{key}' in {done.path}" + (f" (backup: {done.backup})" if done.backup else ""))
    if done.dropped_comments:
        typer.echo(f"note: the comments and trailing commas in {done.path} were not kept; the backup has them")
    typer.echo("restart the client to pick it up")


def _check_bundled(scenarios_file: Path, scenario: str) -> None:
    """A usage error unless the server bundles `scenario` (what `serve --scenario` would refuse at start)."""
    from envscaler_mcp._io import read_json
    from envscaler_mcp.errors import UsageError

    bundled = read_json(scenarios_file) if scenarios_file.is_file() else []
    known = [str(s.get("id")) for s in bundled if isinstance(s, dict)] if isinstance(bundled, list) else []
    if scenario not in known:
        shown = ", ".join(known[:5]) + (f" … ({len(known)} in all)" if len(known) > 5 else "")
        raise UsageError(f"--scenario: the server bundles no scenario '{scenario}' ({shown or 'it bundles none'})")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("serve")(serve_command)
    app.command("install")(install_command)
