"""Run a command the way a machine without unprivileged user namespaces would: unshare(2) and clone(2) with
CLONE_NEWUSER fail with EPERM (as under Ubuntu's AppArmor restriction or a container's seccomp profile).

    python -m tests.security.no_userns PROGRAM [ARGS ...]
"""

from __future__ import annotations

import errno
import os
import sys

import pyseccomp as sc

CLONE_NEWUSER = 0x10000000


def main() -> None:
    filt = sc.SyscallFilter(sc.ALLOW)
    for name in ("unshare", "clone"):
        filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # its flags are out of the filter's reach: use clone
    filt.load()  # sets no_new_privs: kept, with the filter, by every program started from here
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
