"""seccomp filters built with libseccomp (through `pyseccomp`): system calls a sandboxed process may not make.

Filters deny by name (libseccomp maps names to each architecture's numbers and kills a process that
switches architecture, e.g. through the x86 32-bit or x32 entry points). A denied call fails with EPERM
(clone3 with ENOSYS, so the C library falls back to clone, whose flags a filter can inspect).

* `ZYGOTE`: what no sandboxed process needs: exec, sockets, opening files, tracing, namespaces, mounts,
  kernel keyrings, io_uring (which would bypass the filter), loading BPF or modules, changing identity,
  System V IPC and POSIX message queues, and changing another process's resource limits or scheduling.
* `BATCH` (stacked on `ZYGOTE` in the process that runs validators): also no fork/clone and no signals.
* `episode_filter()`: stacked in each episode process of a forking server: no process, thread or signal,
  and its parent-death signal stays set.
* `server_filter(pid)`: a launched environment server: no exec, no new processes (threads allowed), no
  socket creation (it serves a listening socket it inherited), signals only to itself, plus the common
  dangerous calls, IPC and other processes' limits and scheduling; it must still open files to import its modules (Landlock limits which).

`compile_bpf` turns a filter into raw BPF once; `install_bpf` loads it in a forked child in ~0.1 ms.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable

TYPE_CHECKING = False  # `typing` stays out of the start of the processes that import this
if TYPE_CHECKING:
    from typing import Any

PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_PDEATHSIG = 22, 2, 1
CLONE_THREAD = 0x00010000
AF_UNIX = 1

_DANGEROUS = (
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fsconfig", "fspick", "mount_setattr", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "keyctl", "add_key", "request_key",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "open_by_handle_at", "name_to_handle_at", "syslog", "settimeofday",
    "clock_settime", "adjtimex", "clock_adjtime", "sethostname", "setdomainname", "iopl", "ioperm", "mknod",
    "mknodat", "fanotify_init", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setgroups", "setfsuid", "setfsgid", "capset", "personality", "memfd_create", "mbind", "migrate_pages",
    "move_pages",
)
# Shared memory, semaphores and message queues outlive the process that made them and are not counted by
# RLIMIT_AS: System V IPC and POSIX message queues (POSIX shared memory is a file under /dev/shm).
_IPC = (
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)
# Calls that change another process (its limits, priority, scheduling, CPUs, I/O priority) when given a
# non-zero process id: allowed only on the caller itself (id 0).
_ON_SELF_ONLY = ("prlimit64", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")
PRIO_PROCESS, IOPRIO_WHO_PROCESS = 0, 1
_NETWORK = ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4")
_FILES = (
    "open", "openat", "openat2", "creat", "truncate", "unlink", "unlinkat", "rename", "renameat", "renameat2",
    "link", "linkat", "symlink", "symlinkat", "mkdir", "mkdirat", "rmdir", "chmod", "fchmodat", "chown",
    "lchown", "fchownat", "utimes", "utimensat", "futimesat", "inotify_init", "inotify_init1",
)
_PROCESSES = ("fork", "vfork", "clone")
_SIGNALS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal")

ZYGOTE = _DANGEROUS + _IPC + _NETWORK + _FILES
BATCH = _PROCESSES + _SIGNALS + ("setpgid", "setsid", "pipe", "pipe2", "prctl")


class SeccompUnavailable(OSError):
    """libseccomp (or the kernel's seccomp filter mode) is missing."""


def _library() -> Any:
    try:
        import pyseccomp
    except (ImportError, OSError) as exc:  # pyseccomp loads libseccomp.so.2 when imported
        raise SeccompUnavailable(errno.ENOSYS, f"libseccomp is not available ({exc})") from exc
    return pyseccomp


def _deny(filt: Any, sc: Any, names: Iterable[str]) -> None:
    for name in names:
        try:
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):  # unknown on this architecture
            continue


def _self_only(filt: Any, sc: Any) -> None:
    """Resource limits and scheduling may be changed on the caller only: a non-zero process id is refused
    (`setrlimit` and `prlimit(0, ...)` work; `resource.prlimit(os.getpid(), ...)` does not)."""
    for name in _ON_SELF_ONLY:
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 0))
    for name, which in (("setpriority", PRIO_PROCESS), ("ioprio_set", IOPRIO_WHO_PROCESS)):
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, which))  # no process group or user
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(1, sc.NE, 0))


def build(names: Iterable[str]) -> Any:
    """A libseccomp filter that denies `names` (EPERM), clone3 (ENOSYS) and changing another process's
    limits or scheduling (EPERM); everything else is allowed."""
    sc = _library()
    filt = sc.SyscallFilter(sc.ALLOW)
    _deny(filt, sc, names)
    _self_only(filt, sc)
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return filt


def server_filter(pid: int, forks: bool = False) -> Any:
    """The filter of a launched environment server whose process id is `pid` (see the module docstring).
    `forks`: it may fork (episode processes, which then load `episode_filter`)."""
    sc = _library()
    filt = sc.SyscallFilter(sc.ALLOW)
    _deny(filt, sc, (*_DANGEROUS, *_IPC, "socket", "connect", "bind", "rt_sigqueueinfo",
                     "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal", *([] if forks else ["fork", "vfork"])))
    _self_only(filt, sc)
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if not forks:
        filt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    filt.add_rule(sc.ERRNO(errno.EPERM), "socketpair", sc.Arg(0, sc.NE, AF_UNIX))
    for name in ("kill", "tgkill"):
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, pid))
    filt.add_rule(sc.ERRNO(errno.EPERM), "tkill")
    return filt


def episode_filter() -> Any:
    """Stacked on `server_filter` in an episode's own process (servers with --episode-process fork): no new
    process and no thread (environment code gets none: a cap that holds whatever the kernel's user namespaces
    and RLIMIT_NPROC's per-user count allow), and no signals at all, so nothing it starts outlives it and it
    reaches no other process of its server; and it may not clear its parent-death signal (the zygote's thread
    that forked it ends when the server closes the episode, and the kernel then kills it)."""
    sc = _library()
    filt = sc.SyscallFilter(sc.ALLOW)
    _deny(filt, sc, ("fork", "vfork", "clone", "kill", "tkill", "tgkill", "setsid", "setpgid"))
    filt.add_rule(sc.ERRNO(errno.EPERM), "prctl", sc.Arg(0, sc.EQ, PR_SET_PDEATHSIG))
    return filt


def compile_bpf(filt: Any) -> bytes:
    """The filter as raw BPF instructions (what `install_bpf` loads)."""
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "wb", closefd=True) as out:
            filt.export_bpf(out)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(read_end)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class CompiledFilter:
    """Raw BPF ready to load with one prctl (kept alive here so forked children can load it)."""

    def __init__(self, bpf: bytes) -> None:
        self._buffer = ctypes.create_string_buffer(bpf, len(bpf))
        self._prog = _SockFprog(len(bpf) // 8, ctypes.cast(self._buffer, ctypes.c_void_p))
        self._prctl = ctypes.CDLL(None, use_errno=True).prctl

    def install(self) -> None:
        """Load the filter into this process; it stays for this process and everything it starts."""
        if self._prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(self._prog), 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(PR_SET_SECCOMP): {os.strerror(err)}")
