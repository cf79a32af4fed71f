"""Landlock (Linux 5.13+): unprivileged file-system, network and signal restrictions, through its three system calls.

The `landlock` package on PyPI covers file-system rules only (no network rules, no scoping), so this module
speaks to the kernel directly with ctypes. A process restricts itself, and every process it later forks
or executes inherits the restriction; nothing can lift it. Standard library only.

    restrict(read=[...], execute=[...])   # only these paths may be read / executed; no TCP bind or connect;
                                          # no signals to processes outside the sandbox
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

# Access rights on files (ABI 1 unless noted).
EXECUTE, WRITE_FILE, READ_FILE = 1 << 0, 1 << 1, 1 << 2
READ_DIR = 1 << 3
_ABI1_FS = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class LandlockUnavailable(OSError):
    """The kernel has no Landlock (too old, not built in, or disabled at boot)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64))


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is unavailable."""
    version = _libc.syscall(_CREATE_RULESET, None, 0, _VERSION_FLAG)
    return int(version) if version > 0 else 0


def fs_rights(abi: int) -> int:
    """Every file-system access right the kernel's ABI knows (all of them are handled, i.e. denied by default)."""
    rights = _ABI1_FS
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def set_no_new_privs() -> None:
    """No exec can grant privileges from now on (needed by Landlock and seccomp for unprivileged processes)."""
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(err)}")


def _call(nr: int, *args: object) -> int:
    result = _libc.syscall(nr, *args)
    if result < 0:
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EOPNOTSUPP):
            raise LandlockUnavailable(err, "Landlock is not supported or is disabled by this kernel")
        raise OSError(err, os.strerror(err))
    return int(result)


def restrict(read: Iterable[str] = (), execute: Iterable[str] = (), *, deny_tcp: bool = True,
             scope: bool = True) -> dict[str, str]:
    """Restrict this process (and everything it starts) for good; returns what was enforced, by layer name.

    Every file-system right is denied except reading (files, directory listings) beneath the `read` paths
    and executing the `execute` files. With `deny_tcp` (ABI 4+) no TCP port may be bound or connected to
    (sockets already open keep working); with `scope` (ABI 6+) no signal reaches a process outside the
    sandbox and no abstract UNIX socket outside it can be reached. Raises LandlockUnavailable or OSError.
    """
    abi = abi_version()
    if abi <= 0:
        raise LandlockUnavailable(errno.EOPNOTSUPP, "Landlock is not supported or is disabled by this kernel")
    handled_fs = fs_rights(abi)
    net = NET_BIND_TCP | NET_CONNECT_TCP if deny_tcp and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if scope and abi >= 6 else 0
    attr = _RulesetAttr(handled_fs, net, scoped)
    size = 24 if scoped else 16 if net else 8  # older kernels reject fields they do not know
    ruleset = _call(_CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for paths, rights in ((read, READ_FILE | READ_DIR), (execute, EXECUTE | READ_FILE)):
            for path in paths:
                _allow(ruleset, path, rights)
        set_no_new_privs()
        _call(_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    enforced = {"landlock-fs": f"ABI {abi}: " + ("read-only beneath the allowed paths" if read or execute
                                                 else "no file may be opened, created or changed")}
    if net:
        enforced["landlock-net"] = f"ABI {abi}: no TCP bind or connect"
    if scoped:
        enforced["landlock-scope"] = f"ABI {abi}: no signals or abstract UNIX sockets beyond the sandbox"
    return enforced


def _allow(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
        _call(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(_PathBeneathAttr(rights, fd)), 0)
    finally:
        os.close(fd)
