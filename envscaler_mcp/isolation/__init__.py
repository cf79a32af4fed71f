"""OS isolation for untrusted code: Linux namespaces, Landlock and seccomp, each applied by a process to itself.

* `namespaces`: an empty network, its own process tree and IPC, an empty root, no privileges.
* `landlock`: which paths may be read or executed, no TCP bind/connect, no signals beyond the sandbox.
* `seccomp`: system calls denied by name (exec, new processes, sockets, opening files, tracing ...).
* `report`: `IsolationReport`, the record of which layers are active on this machine and why others are not.
* `lifeline`: a child process that ends when this process ends, however it ends (the local model server).
* `probe`: which layers a server process gets here, measured by a confined process (`server_layers`).

Used by the validator sandbox (scoring/) and by launched environment servers (launch/). Every module but
`report` uses the standard library only (plus `pyseccomp` for seccomp), so a freshly started sandboxed
process imports it before anything else.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

CONFINE_SERVER = "envscaler_mcp.isolation.confine_server"


def confined_command(args: Sequence[str]) -> list[str]:
    """argv of a fresh Python running `confine_server` with `args`; `-s -P` keep the user's site folder and the
    working directory (an untrusted server folder) off the module search path."""
    return [sys.executable, "-s", "-P", "-m", CONFINE_SERVER, *args]
