"""Linux namespaces and identity: a process gives itself an empty network, its own process tree and IPC, an
empty root directory, and drops every privilege. Standard library only (ctypes for unshare and capset).

As root the namespaces need no user namespace and the process then becomes `nobody`; as a normal user a
user namespace comes first (refused on kernels or distributions that disable unprivileged user namespaces,
e.g. Ubuntu's AppArmor restriction or a container's seccomp profile), then every capability is dropped.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x00020000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
NOBODY = 65534
_CAP_VERSION_3 = 0x20080522
PR_SET_KEEPCAPS, CAP_DAC_READ_SEARCH = 8, 2
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, PR_CAP_AMBIENT_CLEAR_ALL = 47, 2, 4
UNIQUE_UID_BASE = 0x60000000  # + a process id (below 2**22): a uid no other live process holds

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """unshare(2): move this process into new namespaces (a new PID namespace applies to its children)."""
    _check(_libc.unshare(flags), "unshare")


def isolate(pid: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """New network, IPC, mount (and PID, for the children) namespaces; a user namespace first when not root.

    Returns (active, refused): layer name -> what it enforces / why the kernel refused it.
    """
    wanted = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS | (CLONE_NEWPID if pid else 0)
    uid, gid = os.geteuid(), os.getegid()
    active: dict[str, str] = {}
    if uid != 0:
        try:
            unshare(CLONE_NEWUSER | wanted)
        except OSError as exc:
            reason = f"the kernel refused an unprivileged user namespace ({exc.strerror})"
            return {}, {name: f"{reason}; {STILL_HOLDS[name]}" for name in _names(pid)}
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        active["user-namespace"] = f"own user namespace (uid {uid} mapped to itself)"
    else:
        try:
            unshare(wanted)
        except OSError as exc:
            reason = f"unshare refused even as root ({exc.strerror})"
            return {}, {name: f"{reason}; {STILL_HOLDS[name]}" for name in _names(pid)}
    active["network-namespace"] = "an empty network namespace: no interface is up, not even loopback"
    active["ipc-namespace"] = "own System V IPC and POSIX message queues"
    if pid:
        active["pid-namespace"] = "own process tree: nothing outside is visible or reachable by a signal"
    return active, {}


# What still holds when a namespace is refused (seccomp and Landlock need neither root nor a user namespace).
STILL_HOLDS = {
    "network-namespace": "Landlock still denies TCP bind/connect and seccomp socket creation",
    "ipc-namespace": "seccomp still refuses System V IPC and POSIX message queues",
    "pid-namespace": "other processes are visible by pid; seccomp still refuses signals, tracing and changing their "
                     "limits or scheduling, and Landlock keeps /proc unreadable and signals scoped",
}


def _names(pid: bool) -> list[str]:
    names = ["network-namespace", "ipc-namespace"]
    return [*names, "pid-namespace"] if pid else names


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="ascii") as out:
            out.write(text)
    except OSError:
        pass  # an unmapped id still works; it only shows as the overflow id


def enter_empty_root(path: str) -> None:
    """chroot(2) into `path` (an empty directory): from now on no path names anything."""
    os.chroot(path)
    os.chdir("/")


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32))


def drop_capabilities() -> str:
    """Drop every capability (effective, permitted, inheritable) and keep the user id."""
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capset")
    return f"uid {os.getuid()}, no capabilities"


def become_unique_user(seed: int) -> str:
    """Root only: become uid UNIQUE_UID_BASE + `seed` (a live process id in the initial PID namespace, no
    longer than this process lives: a uid no other process holds), no groups, keeping only
    CAP_DAC_READ_SEARCH (to read the files it is given; Landlock limits which). Such a process can signal,
    trace or change the limits of no other process, and RLIMIT_NPROC counts its threads alone."""
    uid = UNIQUE_UID_BASE + seed
    _check(_libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    finally:
        _libc.prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0)
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = 1 << CAP_DAC_READ_SEARCH
    _check(_libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capset")
    if os.getresuid() != (uid,) * 3:
        raise OSError("setresuid did not take effect")
    return f"uid {uid} (this server's alone), no groups, no capability but reading files (CAP_DAC_READ_SEARCH)"


def _capabilities() -> ctypes.Array[_CapData]:
    data = (_CapData * 2)()
    _check(_libc.capget(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capget")
    return data


def _set_inheritable(data: ctypes.Array[_CapData], mask: int) -> None:
    data[0].inheritable = mask
    _check(_libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capset")


def keep_reading_across_exec(keep: bool) -> None:
    """With `keep`: a program this process executes keeps CAP_DAC_READ_SEARCH when this process holds it (an
    ambient capability: a server of `become_unique_user` starting its episode zygote, which must read the
    same files); without: no capability is kept across exec any more (the ambient and inheritable sets empty),
    what this process holds unchanged."""
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    data = _capabilities()
    reading = data[0].permitted & (1 << CAP_DAC_READ_SEARCH)
    _set_inheritable(data, reading if keep else 0)
    if keep and reading:
        _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_DAC_READ_SEARCH, 0, 0),
               "prctl(PR_CAP_AMBIENT_RAISE)")


def drop_identity() -> str:
    """Become unprivileged for good: root turns into `nobody` (no groups); anyone else drops every capability
    (in a user namespace a process holds all of them). Returns the identity now held."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)  # leaving uid 0 clears every capability
        if os.getresuid() != (NOBODY,) * 3 or os.getresgid() != (NOBODY,) * 3:
            raise OSError("setresuid(nobody) did not take effect")
        return f"uid {NOBODY} (nobody), no groups, no capabilities"
    return drop_capabilities()


def become_pid_one() -> tuple[int, int]:
    """After `isolate(pid=True)`: fork; the child returns (PID 1 of the new PID namespace, killed if this
    process dies) and this process only waits for it, passing on SIGTERM and SIGHUP, and exits as it did.
    SIGINT is ignored here: a terminal's Ctrl-C reaches the child directly (same process group), and passing
    it on would make it two. Returns, in the child, the waiting parent's process id and a descriptor that
    reads end-of-file once the parent is gone (for `stay_tied`)."""
    parent = os.getpid()
    alive, held = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(held)
        if not die_with_parent():
            os._exit(1)
        return parent, alive
    os.close(alive)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda got, _frame: os.kill(child, got))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # the streams are the server's: the waiter holds no end of them
    os.closerange(3, held)
    os.closerange(held + 1, 65536)
    while True:
        _, status = os.waitpid(child, 0)
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))


def stay_tied(alive: int) -> None:
    """In the child of `become_pid_one`, after a change of user id (which clears the parent-death signal):
    ask for it again, then end at once if the parent went in between (its end of `alive` is closed)."""
    _check(_libc.prctl(1, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
    gone, _, _ = select.select([alive], [], [], 0)
    os.close(alive)
    if gone:
        os._exit(1)


def die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies; False if the parent is already gone."""
    parent = os.getppid()
    _check(_libc.prctl(1, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")  # PR_SET_PDEATHSIG, SIGKILL
    return os.getppid() == parent
