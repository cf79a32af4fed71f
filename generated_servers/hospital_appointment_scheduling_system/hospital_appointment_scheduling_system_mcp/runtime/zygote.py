"""The zygote of a server whose episodes run in processes of their own (forked.py says why and how).

It is forked from the server before the admin token is read, forgets the token, and then only compiles the
environment module (running none of it) and forks one process per episode, which runs the module and serves
its episode. Everything here runs in the zygote or in an episode process, never in the server.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import gc
import importlib.util
import json
import os
import resource
import select
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

from . import journal
from .episode import Episode
from .forked import GRACE_S, ForkRefused, Zygote, receive, send
from .states import StateFiles

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 4, 22, 2
PR_SET_CHILD_SUBREAPER = 36
LOG_MAX = 16 << 20  # the largest file an episode's process writes (its output goes to the server's log)
_libc = ctypes.CDLL(None, use_errno=True)


def start_zygote(package_name: str, spec: dict[str, Any], default_state: dict[str, Any],
                 scenarios: dict[str, dict[str, Any]], state_dir: Any, call_timeout: float | None,
                 token_env: str, episode_filter: bytes | None = None, grace: float = GRACE_S) -> Zygote:
    """Fork the zygote (call before the token is read and before any thread or event loop exists).
    `episode_filter`: a seccomp filter (raw BPF) every episode process loads before running environment code;
    `grace`: how long beyond twice the call timeout the server waits for an episode's process."""
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # inherited: no process of this server is readable by its uid
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid:
        theirs.close()
        return Zygote(ours, pid, call_timeout, grace)
    try:
        ours.close()
        _forget(token_env)
        _detach(keep=theirs.fileno())
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server answers Ctrl-C; the zygote ends with it
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps ended episodes and keepers
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # an episode whose keeper ended is reaped here
        _Zygote(theirs, package_name, spec, default_state, scenarios, StateFiles(state_dir), call_timeout,
                episode_filter).serve()
    except BaseException as exc:  # the server is told by its closed channel; this says why
        print(f"error: the episode zygote stopped ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)
    finally:
        os._exit(0)


def _forget(name: str) -> None:
    """Overwrite the variable's value where this process holds it (Python's copy and the C environment block,
    which /proc/self/environ shows), then unset it."""
    value = os.environb.get(name.encode())
    if value:
        ctypes.memset(id(value) + sys.getsizeof(value) - len(value) - 1, 0, len(value))
    prefix = name.encode() + b"="
    table = ctypes.c_void_p.in_dll(_libc, "environ").value
    step = ctypes.sizeof(ctypes.c_void_p)
    while table:
        entry = ctypes.c_void_p.from_address(table).value
        if not entry:
            break
        text = ctypes.string_at(entry)
        if text.startswith(prefix):
            ctypes.memset(entry + len(prefix), 0, len(text) - len(prefix))
        table += step
    os.environ.pop(name, None)


def _detach(keep: int) -> None:
    """Hold none of the server's descriptors (its protocol streams, its listening socket) but `keep` and stderr."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # what environment code prints goes to the log
    os.close(null)
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)


class _Zygote:
    def __init__(self, channel: socket.socket, package_name: str, spec: dict[str, Any],
                 default_state: dict[str, Any], scenarios: dict[str, dict[str, Any]], state_files: StateFiles,
                 call_timeout: float | None, episode_filter: bytes | None) -> None:
        self.channel = channel
        self.spec = spec
        self.default_state = default_state
        self.scenarios = scenarios
        self.state_files = state_files
        self.call_timeout = call_timeout
        self.module_name = f"{package_name}.environment"
        self.restrict = _Filter(episode_filter).install if episode_filter else None
        module_spec = importlib.util.find_spec(self.module_name)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"no module {self.module_name}")
        self.module_spec = module_spec
        loader: Any = module_spec.loader
        source = loader.get_source(self.module_name)
        self.code = compile(source, module_spec.origin or self.module_name, "exec")  # compiling runs nothing
        with _stdlib_only():
            for name in _stdlib_imports(source):
                try:
                    importlib.import_module(name)
                except Exception:  # the episode's own import will say what is wrong
                    continue
        gc.freeze()

    def _state(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("state_file") is not None:
            try:
                return self.state_files.read(str(request["state_file"]))
            except ValueError as exc:
                raise ForkRefused(400, str(exc)) from None
        if request.get("scenario_id") is not None:
            scenario = self.scenarios.get(str(request["scenario_id"]))
            if scenario is None:
                known = ", ".join(self.scenarios) or "(none)"
                raise ForkRefused(404, f"unknown scenario '{request['scenario_id']}'; bundled scenarios: {known}")
            return dict(scenario["initial_state"])
        state = request.get("state")
        if state is None:
            return self.default_state
        if not isinstance(state, dict):
            raise ForkRefused(400, "state must be a JSON object keyed by state attribute names")
        return state

    def serve(self) -> None:
        while True:
            message = receive(self.channel)
            if message is None:
                return
            request = json.loads(message)
            try:
                state = self._state(request)
            except ForkRefused as exc:
                self._refuse(exc.status, exc.message)
                continue
            server_end, episode_end = socket.socketpair()
            try:
                pid = os.fork()
            except OSError as exc:  # out of processes (the thread cap counts them)
                server_end.close()
                episode_end.close()
                self._refuse(503, f"cannot start another episode process ({exc.strerror or exc}); close some")
                continue
            if pid == 0:
                self.channel.close()
                server_end.close()
                self._keep(episode_end, state)
            episode_end.close()
            socket.send_fds(self.channel, [json.dumps({"pid": pid}).encode()], [server_end.fileno()])
            server_end.close()

    def _refuse(self, status: int, message: str) -> None:
        socket.send_fds(self.channel, [json.dumps({"status": status, "message": message}).encode()], [])

    def _keep(self, sock: socket.socket, state: dict[str, Any]) -> None:
        """The episode's keeper: forks the episode's process, then ends when the server closes the channel
        (the episode is closed, or the server gave up on a call that never returned) or when the episode's
        process ends. The kernel then kills the episode's process (its parent-death signal, which its seccomp
        filter keeps it from clearing): environment code that blocks the timeout signal and never reads its
        channel again does not outlive its episode. Runs no environment code."""
        try:
            _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # ends with the zygote
            signal.signal(signal.SIGCHLD, lambda *_: os._exit(0))  # the zygote (a subreaper) reaps the episode
            keeper = os.getpid()
            if os.fork() == 0:
                self._episode(sock, state, keeper)
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLRDHUP)  # only the server's close wakes it, never a request
            while not poller.poll():
                continue
        finally:
            os._exit(0)

    def _episode(self, sock: socket.socket, state: dict[str, Any], keeper: int) -> None:
        """The episode's process: build the episode, answer its requests until the server closes the channel."""
        try:
            _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != keeper:  # the keeper ended before the signal was set
                return
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            # its stdout and stderr are the server's log, a file of the launcher's: no file written past LOG_MAX
            # (a write there fails; the server's own writes are not limited)
            resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_MAX, LOG_MAX))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            if self.restrict is not None:
                self.restrict()  # no new process, no signal: nothing outlives the episode or reaches another
            try:
                module = importlib.util.module_from_spec(self.module_spec)
                sys.modules[self.module_name] = module
                exec(self.code, module.__dict__)
                env_class = journal.journaled_class(getattr(module, self.spec["class_name"]))
                episode = Episode(env_class, list(self.spec["state_names"]), state, "forked")
            except BaseException as exc:
                send(sock, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
                return
            send(sock, json.dumps({"pid": os.getpid()}).encode())
            while (message := receive(sock)) is not None:
                if message == b"state":
                    send(sock, episode.state_json().encode("utf-8"))
                    continue
                request = json.loads(message)
                outcome = episode.call(request["name"], request["arguments"], self.call_timeout)
                tag = b"E" if outcome.is_error else b"R" if outcome.rolled_back else b"K"
                send(sock, tag + outcome.text.encode("utf-8"))
        except BaseException:
            pass
        finally:
            os._exit(0)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class _Filter:
    """A seccomp filter as raw BPF (what the OS layers hand over), loaded by `install` in an episode process."""

    def __init__(self, bpf: bytes) -> None:
        self._buffer = ctypes.create_string_buffer(bpf, len(bpf))
        self._prog = _SockFprog(len(bpf) // 8, ctypes.cast(self._buffer, ctypes.c_void_p))

    def install(self) -> None:
        if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._prog), 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")


@contextlib.contextmanager
def _stdlib_only() -> Iterator[None]:
    """Imports from Python's own library only: the server folder is first on the search path, and a module
    of it named like a standard one (`fractions.py` beside the package, imported by `statistics`) is
    environment code, which the zygote never runs."""
    saved = sys.path[:]
    sys.path[:] = [entry for entry in saved if entry and _in_stdlib(os.path.realpath(entry))]
    try:
        yield
    finally:
        sys.path[:] = saved


_STDLIB = os.path.realpath(os.path.dirname(os.__file__))


def _in_stdlib(path: str) -> bool:
    """Python's library folder or one beneath it (lib-dynload), never an installed-packages folder."""
    return (path == _STDLIB or path.startswith(_STDLIB + os.sep)) and \
        not {"site-packages", "dist-packages"} & set(path.split(os.sep))


def _stdlib_imports(source: str) -> list[str]:
    """Standard library modules the source names (imported from Python's own library, `_stdlib_only`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if n in sys.stdlib_module_names)
