"""Command line of a generated server: stdio (one episode) or streamable HTTP (many episodes)."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .package import EnvPackage
    from .server import EnvServer

ADMIN_TOKEN_ENV = "ENVSCALER_ADMIN_TOKEN"


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=description)
    start = p.add_mutually_exclusive_group()
    start.add_argument("--scenario", metavar="ID", help="start from a bundled scenario's initial state (stdio)")
    start.add_argument("--state", metavar="FILE", type=Path, help="start from a state JSON file (stdio)")
    p.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000; 0 picks a free one)")
    p.add_argument("--listen-fd", type=int, default=None,
                   help="HTTP: serve a listening socket inherited as this descriptor (--host/--port are ignored)")
    p.add_argument("--admin-token", default=None,
                   help=f"bearer token of the HTTP admin API (default: ${ADMIN_TOKEN_ENV}; none = admin off)")
    p.add_argument("--allow-remote-admin", action="store_true",
                   help="accept admin requests from non-loopback clients (default: loopback only)")
    p.add_argument("--state-dir", type=Path, default=None,
                   help="folder of state files episodes may be created from (admin API: {\"state_file\": NAME})")
    p.add_argument("--max-episodes", type=int, default=1000,
                   help="most episodes alive at once (HTTP, or stdio with the admin plane on)")
    p.add_argument("--call-timeout", type=float, default=10.0,
                   help="seconds one tool call may run before it is stopped (default 10; 0 = no limit)")
    p.add_argument("--max-memory-mb", type=int, default=None, help="address-space limit of this process (MB)")
    p.add_argument("--episode-process", choices=["shared", "fork"], default="shared",
                   help="fork: every episode runs in a process of its own, forked from a zygote that never runs "
                        "environment code (for environment code nobody vouches for); shared: all in this one")
    p.add_argument("--answer-grace", type=float, default=None, metavar="S",
                   help="fork: seconds beyond twice the call timeout the server waits for an episode's process "
                        "before it gives up on it and the process ends (default: forked.GRACE_S, 30)")
    p.add_argument("--episode-filter-fd", type=int, default=None,
                   help="fork: read a seccomp filter (raw BPF) from this descriptor; every episode process loads it "
                        "(the launcher's OS layers give it)")
    p.add_argument("--zygote-fd", type=int, default=None,
                   help="fork: the channel of an episode zygote the launcher started (an interpreter of its own, "
                        "confined like this server); without it the server forks its zygote itself")
    p.add_argument("--zygote-pid", type=int, default=None, help="fork: that zygote's process id")
    p.add_argument("--ready-file", type=Path, default=None,
                   help="HTTP: write {\"url\", \"port\"} to this file once the server accepts connections")
    p.add_argument("--otel-spans", action="store_true",
                   help="wrap every request in an OpenTelemetry span (needs an exporter configured; off: faster)")
    p.add_argument("--log-level", default="WARNING", help="log level on stderr (default WARNING)")
    p.add_argument("--list-scenarios", action="store_true", help="print the bundled scenarios and exit")
    return p


def _limit_memory(megabytes: int) -> None:
    try:
        import resource
    except ImportError:  # not on Windows
        logging.getLogger(__name__).warning("--max-memory-mb is not supported on this platform; ignored")
        return

    limit = megabytes * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _initial_state(args: argparse.Namespace, package: EnvPackage) -> dict[str, Any] | None:
    if args.scenario:
        return package.scenario_state(args.scenario)
    if args.state:
        state = json.loads(args.state.read_text(encoding="utf-8"))
        if not isinstance(state, dict):
            raise ValueError(f"{args.state}: a state must be a JSON object keyed by state attribute names")
        return state
    return None


def _read_fd(fd: int | None) -> bytes | None:
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as source:
        return source.read()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of `python -m <package>`. Ctrl-C (SIGINT, as a terminal sends
    it to its foreground job) stops the server with one line and exit code 130, not a traceback."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        print("stopped (interrupted)", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


def _main(argv: list[str] | None) -> None:
    from .package import load_package, with_class

    package = load_package(import_class=False)  # data only: no environment code has run yet
    spec = package.spec
    args = _parser(spec["script_name"], f"MCP server of the '{spec['name']}' environment.").parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.list_scenarios:
        for sid, s in package.scenarios.items():
            print(f"{sid}\t{s.get('title') or s['task'][:80]}")
        return
    if args.max_memory_mb:
        _limit_memory(args.max_memory_mb)
    zygote = None
    if args.episode_process == "fork":
        from .forked import GRACE_S
        from .package import _PACKAGE_NAME
        from .zygote import attach_zygote, start_zygote

        grace = GRACE_S if args.answer_grace is None else args.answer_grace
        if args.zygote_fd is not None and args.zygote_pid is not None:
            zygote = attach_zygote(args.zygote_fd, args.zygote_pid, args.state_dir, args.call_timeout or None, grace)
        else:
            # Forked before the token is read (pass it in the environment, not with --admin-token): the zygote
            # and the episodes it forks never hold it.
            zygote = start_zygote(_PACKAGE_NAME, package, args.state_dir,
                                  args.call_timeout or None, ADMIN_TOKEN_ENV, _read_fd(args.episode_filter_fd),
                                  grace)
    # Taken out of the environment before any environment code is imported, so that it cannot read it.
    env_token = os.environ.pop(ADMIN_TOKEN_ENV, None)
    if zygote is None:
        package = with_class(package)
    try:
        state = _initial_state(args, package)
    except (KeyError, ValueError, OSError) as exc:
        print(f"error: {exc.args[0] if isinstance(exc, KeyError) else exc}", file=sys.stderr)
        raise SystemExit(2) from None
    token = args.admin_token or env_token or None
    timeout = args.call_timeout or None

    from .server import EnvServer

    try:
        env_server = EnvServer(package, call_timeout=timeout, admin_token=token, initial_state=state,
                               otel_spans=args.otel_spans, state_dir=args.state_dir, max_episodes=args.max_episodes,
                               zygote=zygote)
    except ValueError as exc:  # the default episode's process could not build it
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    gc.freeze()  # the package, its scenarios and the initial state live as long as the server: never walked
    if args.http:
        _serve_http(env_server, args, token)
    else:
        import anyio
        from mcp.server.stdio import stdio_server

        from .pipeio import pipe_streams

        async def _run() -> None:
            async with pipe_streams() as streams:  # pipes without threads; else the SDK's own streams
                async with stdio_server(*(streams or ())) as (read, write):
                    await env_server.server.run(read, write, env_server.server.create_initialization_options())

        anyio.run(_run)


def _serve_http(env_server: EnvServer, args: argparse.Namespace, token: str | None) -> None:
    import anyio
    import uvicorn

    from .http import HttpApp, is_loopback

    if args.listen_fd is not None:  # bound by the launcher (which may keep this process off the network)
        sock = socket.socket(fileno=args.listen_fd)
        args.host = sock.getsockname()[0]
    else:
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (else ~40 ms delayed-ACK stalls)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:  # a name that does not resolve, a port in use or not ours to take
            print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            sys.exit(2)
        sock.listen(1024)
    if not is_loopback(args.host) and token:
        logging.getLogger(__name__).warning(
            "serving on %s: the admin API still answers loopback clients only%s", args.host,
            " (--allow-remote-admin is set: remote clients with the token are accepted)"
            if args.allow_remote_admin else "")
    app = HttpApp(env_server, host=args.host, admin_token=token, allow_remote_admin=args.allow_remote_admin)
    port = sock.getsockname()[1]
    # A long keep-alive: clients that pool connections (one admin client driving hundreds of episodes)
    # must not reuse a connection the server has just closed as idle.
    config = uvicorn.Config(app, log_level=args.log_level.lower(), access_log=False, lifespan="on",
                            timeout_graceful_shutdown=2, timeout_keep_alive=300)
    server = uvicorn.Server(config)

    async def _run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: server.serve(sockets=[sock]))
            while not server.started and not server.should_exit:
                await anyio.sleep(0.01)
            host = f"[{args.host}]" if ":" in args.host else args.host
            url = f"http://{host}:{port}"
            print(f"serving {env_server.package.env_id} on {url}/mcp (episodes at {url}/episodes/{{id}}/mcp)",
                  file=sys.stderr, flush=True)
            if args.ready_file and server.started:
                tmp = args.ready_file.with_suffix(".tmp")
                tmp.write_text(json.dumps({"url": url, "port": port, "pid": os.getpid()}), encoding="utf-8")
                tmp.replace(args.ready_file)

    anyio.run(_run)
