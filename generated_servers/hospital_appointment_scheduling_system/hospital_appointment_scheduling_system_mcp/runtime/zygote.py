"""The zygote of a server whose episodes run in processes of their own (forked.py says why and how).

It is forked from the server before the admin token is read, forgets the token, and then only compiles the
environment module (running none of it) and forks one process per episode, which runs the module and serves
its episode. Everything here runs in the zygote or in an episode process, never in the server.

Each episode's process is forked by a short-lived thread of the zygote that then only waits for the server to
close the episode's channel (or for the process to end) and ends. An episode's process dies with that thread:
its parent-death signal fires when the *thread* that forked it ends (prctl(2)), and its seccomp filter keeps
it from clearing the signal. One fork per episode, and no second process to copy and tear down.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import json
import os
import queue
import resource
import select
import signal
import socket
import sys
import threading

from . import journal
from .codecache import prepared
from .episode import Episode
from .framing import GRACE_S, ForkRefused, receive, send
from .preload import import_stdlib
from .states import StateFiles, parse_state_file

TYPE_CHECKING = False  # `typing`, `pathlib` and `dataclasses` stay out of this process's start

if TYPE_CHECKING:
    from typing import Any

    from .forked import Zygote
    from .package import EnvPackage

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 1, 4, 22, 2
PR_SET_CHILD_SUBREAPER = 36
LOG_MAX = 16 << 20  # the largest file an episode's process writes (its output goes to the server's log)
_libc = ctypes.CDLL(None, use_errno=True)


def start_zygote(package_name: str, package: EnvPackage, state_dir: Any, call_timeout: float | None,
                 token_env: str, episode_filter: bytes | None = None, grace: float = GRACE_S) -> Zygote:
    """Fork the zygote (call before the token is read and before any thread or event loop exists).
    `episode_filter`: a seccomp filter (raw BPF) every episode process loads before running environment code;
    `grace`: how long beyond twice the call timeout the server waits for an episode's process."""
    from .forked import Zygote

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
        _serve(theirs, package_name, package, state_dir, call_timeout, episode_filter)
    finally:
        os._exit(0)


def attach_zygote(fd: int, pid: int, state_dir: Any, call_timeout: float | None, grace: float = GRACE_S) -> Zygote:
    """The server's handle on a zygote its launcher started as an interpreter of its own, already confined
    like the server and holding none of its libraries (`--zygote-fd`): `fd` is the server's end of its
    channel. The zygote learns its settings from the first message."""
    from .forked import Zygote

    channel = socket.socket(fileno=fd)
    state_folder = None if state_dir is None else str(state_dir)
    send(channel, json.dumps({"state_dir": state_folder, "call_timeout": call_timeout}).encode())
    return Zygote(channel, pid, call_timeout, grace)


def serve_spawned(fd: int, package_name: str, episode_filter: bytes | None) -> None:
    """The zygote's side of `attach_zygote`, in the interpreter the launcher started: read the settings and the
    package's spec (its data files when an episode first asks for them; no environment code runs), then fork
    episodes until the server closes the channel."""
    from .package import PACKAGE_DIR, load_package

    channel = socket.socket(fileno=fd)
    message = receive(channel)
    if message is None:
        return
    settings = json.loads(message)
    package = load_package(PACKAGE_DIR, package_name, import_class=False)
    state_dir = settings["state_dir"]
    try:
        _serve(channel, package_name, package, state_dir, settings["call_timeout"], episode_filter)
    finally:
        os._exit(0)


def _serve(channel: socket.socket, package_name: str, package: EnvPackage, state_dir: Any,
           call_timeout: float | None, episode_filter: bytes | None) -> None:
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server answers Ctrl-C; the zygote ends with it
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps ended episodes
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # and what one started without seccomp
        _Zygote(channel, package_name, package, StateFiles(state_dir), call_timeout, episode_filter).serve()
    except BaseException as exc:  # the server is told by its closed channel; this says why
        print(f"error: the episode zygote stopped ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)


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
    _close_all_but(0, 1, 2, keep)


class _Zygote:
    def __init__(self, channel: socket.socket, package_name: str, package: EnvPackage, state_files: StateFiles,
                 call_timeout: float | None, episode_filter: bytes | None) -> None:
        self.channel = channel
        self.package = package  # its data files read when an episode first asks for them
        self.spec = package.spec
        self.state_files = state_files
        self.call_timeout = call_timeout
        self.module_name = f"{package_name}.environment"
        self.restrict = _Filter(episode_filter).install if episode_filter else None
        module_spec = importlib.util.find_spec(self.module_name)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"no module {self.module_name}")
        self.module_spec = module_spec
        if module_spec.origin is None:
            raise ImportError(f"no file for the module {self.module_name}")
        # compiled (which runs nothing), or taken from the launcher's cache of this very source (codecache.py)
        self.code, names = prepared(module_spec.origin)
        import_stdlib(names)
        gc.freeze()

    def _state(self, request: dict[str, Any]) -> dict[str, Any] | tuple[str, bytes]:
        """The episode's initial state; a state file's name and bytes, which only the episode's process parses
        (the zygote then never allocates, holds or frees a state its episodes share: fewer pages copied on
        write on either side of the fork)."""
        if request.get("state_file") is not None:
            name = str(request["state_file"])
            try:
                return name, self.state_files.read_text(name)
            except ValueError as exc:
                raise ForkRefused(400, str(exc)) from None
        if request.get("scenario_id") is not None:
            scenarios = self._data("scenarios")
            scenario = scenarios.get(str(request["scenario_id"]))
            if scenario is None:
                known = ", ".join(scenarios) or "(none)"
                raise ForkRefused(404, f"unknown scenario '{request['scenario_id']}'; bundled scenarios: {known}")
            return dict(scenario["initial_state"])
        state = request.get("state")
        if state is None:
            default: dict[str, Any] = self._data("default_state")
            return default
        if not isinstance(state, dict):
            raise ForkRefused(400, "state must be a JSON object keyed by state attribute names")
        return state

    def _data(self, name: str) -> Any:
        """The package's default state or bundled scenarios, read on first use; one that cannot be read refuses
        the episode, and the zygote goes on."""
        try:
            return getattr(self.package, name)
        except (ValueError, KeyError, TypeError) as exc:
            raise ForkRefused(500, str(exc)) from None

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
            # plain descriptors: no socket object of the zygote's is left for an episode's code to find
            server_end, episode_end = (end.detach() for end in socket.socketpair())
            try:
                pid = self._fork(episode_end, state)
            except OSError as exc:  # out of processes or threads (the thread cap counts both)
                os.close(server_end)
                self._refuse(503, f"cannot start another episode process ({exc.strerror or exc}); close some")
                continue
            socket.send_fds(self.channel, [json.dumps({"pid": pid}).encode()], [server_end])
            os.close(server_end)

    def _refuse(self, status: int, message: str) -> None:
        socket.send_fds(self.channel, [json.dumps({"status": status, "message": message}).encode()], [])

    def _fork(self, channel: int, state: dict[str, Any] | tuple[str, bytes]) -> int:
        """Fork the episode's process from a thread of its own (`_tie`); its process id. Owns `channel`, the
        episode's end of its channel."""
        life_read, life_write = os.pipe()
        forked: queue.SimpleQueue[int | OSError] = queue.SimpleQueue()
        # handed over in a list the thread empties: a thread keeps its arguments until it ends, and the episode
        # processes forked meanwhile would find this episode's initial state among their objects
        held = [state]
        del state
        try:
            threading.Thread(target=self._tie, args=(channel, life_read, life_write, held, forked),
                             daemon=True).start()
        except RuntimeError as exc:  # can't start new thread
            for fd in (channel, life_read, life_write):
                os.close(fd)
            raise OSError(0, str(exc)) from None
        outcome = forked.get()  # the zygote forks one episode at a time
        if isinstance(outcome, OSError):
            raise outcome
        return outcome

    def _tie(self, channel: int, life_read: int, life_write: int, held: list[dict[str, Any] | tuple[str, bytes]],
             forked: queue.SimpleQueue[int | OSError]) -> None:
        """The thread an episode's process is tied to: forks it, then ends when the server closes the channel
        (the episode is closed, or the server gave up on a call that never returned) or when the process ends
        (its end of the `life` pipe closes). The kernel then kills the episode's process (its parent-death
        signal, which its seccomp filter keeps it from clearing): environment code that blocks the timeout
        signal and never reads its channel again does not outlive its episode. Runs no environment code."""
        zygote = os.getpid()
        state = held.pop()  # the episode's initial state: in the process forked for it, nowhere else after
        try:
            try:
                pid = os.fork()
            except OSError as exc:
                forked.put(exc)
                return
            if pid == 0:
                self._episode(channel, life_write, state, zygote)
            del state
            os.close(life_write)  # before the next fork: only this episode's process holds it
            life_write = -1
            forked.put(pid)
            poller = select.poll()
            poller.register(channel, select.POLLRDHUP)  # only the server's close wakes it, never a request
            poller.register(life_read, 0)  # POLLHUP once the process has ended; what it writes wakes nothing
            while not poller.poll():
                continue
        finally:
            os.close(channel)  # the server reads the end of a process that ended
            os.close(life_read)
            if life_write >= 0:
                os.close(life_write)

    def _episode(self, channel: int, life: int, state: dict[str, Any] | tuple[str, bytes], zygote: int) -> None:
        """The episode's process: build the episode, answer its requests until the server closes the channel."""
        try:
            self.channel.close()
            _close_all_but(0, 1, 2, channel, life)  # the server's end, the other episodes' ends
            if not tie(channel, zygote):
                return
            sock = socket.socket(fileno=channel)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            # its stdout and stderr are the server's log, a file of the launcher's: no file written past LOG_MAX
            # (a write there fails; the server's own writes are not limited)
            resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_MAX, LOG_MAX))
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            if self.restrict is not None:
                self.restrict()  # no new process, no signal: nothing outlives the episode or reaches another
            try:
                if isinstance(state, tuple):  # a state file's bytes: parsed here, in this episode's memory only
                    state = parse_state_file(*state)
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


def tie(channel: int, zygote: int) -> bool:
    """In a process just forked by a zygote's thread, once it holds no copy of the server's end of `channel`: set
    its parent-death signal (SIGKILL when that thread ends), then whether the thread can still fire it. The thread may have ended before the signal was set:
    it ends only once the server has closed `channel`'s other end (seen here as a hang-up) or the zygote has
    ended (this process then has another parent; a thread's end alone does not change it)."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != zygote:
        return False
    poller = select.poll()
    poller.register(channel, select.POLLRDHUP)
    return not poller.poll(0)


def _close_all_but(*keep: int) -> None:
    """Close every descriptor but `keep`. An empty range is skipped: `os.closerange(0, 0)` closes every
    descriptor (Python 3.11 hands the kernel's close_range a last descriptor of -1, read as the largest)."""
    low = 0
    for fd in [*sorted(set(keep)), 65536]:
        if low < fd:
            os.closerange(low, fd)
        low = fd + 1


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
