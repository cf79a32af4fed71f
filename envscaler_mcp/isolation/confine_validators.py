"""The OS layers around validators, applied by the worker process to itself (standard library + pyseccomp).

Order (sandbox/worker.py): imports done -> `enter_namespaces` -> fork the zygote (PID 1 of the new PID
namespace) -> `confine_zygote` -> per scenario batch, fork a batch process -> `confine_batch`. Each step
records in `Layers` what it enforced or why the kernel refused it; the sandbox turns that record into an
`IsolationReport`. Nothing here is fatal: a refused layer is recorded and the next one still applies.
"""

from __future__ import annotations

from envscaler_mcp.isolation import landlock, namespaces, seccomp


class Layers:
    """{layer name: [active, detail]} in the order the layers were considered."""

    def __init__(self, enabled: bool, skip: frozenset[str] = frozenset()) -> None:
        self.enabled = enabled
        self.skip = skip  # test seam: layers left out on purpose, to show what the others contain alone
        self.table: dict[str, list[object]] = {
            "python-restrictions": [True, "restricted builtins and imports, static check of the source"],
            "clean-environment": [True, "an environment with no variables of the caller"],
            "resource-limits": [True, "address space, CPU time per check, no file growth, no core dumps"],
            "fresh-process-per-scenario": [True, "each scenario's checks run in a new fork of a pre-imported "
                                                 "zygote; nothing they change outlives the batch"],
        }

    def on(self, name: str, detail: str) -> None:
        self.table[name] = [True, detail]

    def off(self, name: str, detail: str) -> None:
        self.table[name] = [False, detail if self.enabled else "turned off (isolation disabled)"]

    def wanted(self, group: str, names: tuple[str, ...]) -> bool:
        """False (and the layers marked off) when isolation is disabled or the test seam skips `group`."""
        if self.enabled and group not in self.skip:
            return True
        for name in names:
            self.off(name, "left out by a test" if self.enabled else "")
        return False


_NAMESPACES = ("network-namespace", "ipc-namespace", "pid-namespace")
_AFTER = ("empty-root", "unprivileged-identity", "landlock-fs", "landlock-net", "landlock-scope", "seccomp")


def enter_namespaces(layers: Layers) -> bool:
    """New network, IPC, mount and PID namespaces (user namespace first when not root). True when the next
    child becomes PID 1 of a new PID namespace."""
    if not layers.wanted("namespaces", _NAMESPACES):
        return False
    active, refused = namespaces.isolate(pid=True)
    for name, detail in active.items():
        layers.on(name, detail)
    for name, detail in refused.items():
        layers.off(name, detail)
    return "pid-namespace" in active


def compile_filters() -> tuple[bytes, bytes] | str:
    """The zygote's and the batch process's seccomp programs, built while libseccomp can still be loaded;
    or why they cannot be."""
    try:
        return seccomp.compile_bpf(seccomp.build(seccomp.ZYGOTE)), seccomp.compile_bpf(seccomp.build(seccomp.BATCH))
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"


def confine_zygote(layers: Layers, empty_root: str,
                   filters: tuple[bytes, bytes] | str) -> seccomp.CompiledFilter | None:
    """Empty root, unprivileged identity, Landlock (no files, no TCP, scoped signals) and the zygote's seccomp
    filter, in this process; returns the batch filter each batch process installs (None if unavailable)."""
    if not layers.enabled:
        for name in _AFTER:
            layers.off(name, "")
        return None
    namespaced = bool(layers.table.get("network-namespace", [False])[0])
    if layers.wanted("empty-root", ("empty-root",)):
        try:
            namespaces.enter_empty_root(empty_root)
            layers.on("empty-root", "chroot into an empty, read-only directory: no path names a file")
        except OSError as exc:
            why = "needs root or a user namespace" if not namespaced else exc.strerror or str(exc)
            layers.off("empty-root", f"chroot refused ({why})")
    if layers.wanted("identity", ("unprivileged-identity",)):
        try:
            layers.on("unprivileged-identity", namespaces.drop_identity())
        except OSError as exc:
            layers.off("unprivileged-identity", f"could not drop privileges ({exc})")
    if layers.wanted("landlock", ("landlock-fs", "landlock-net", "landlock-scope")):
        _landlock(layers)
    if not layers.wanted("seccomp", ("seccomp",)):
        return None
    if isinstance(filters, str):
        layers.off("seccomp", filters)
        return None
    zygote_bpf, batch_bpf = filters
    try:
        landlock.set_no_new_privs()
        seccomp.CompiledFilter(zygote_bpf).install()
    except OSError as exc:
        layers.off("seccomp", f"refused: {exc.strerror or exc}")
        return None
    layers.on("seccomp", "no exec, sockets, file opening, tracing, namespaces or mounts; the batch process "
                         "also no fork/clone, signals or pipes")
    return seccomp.CompiledFilter(batch_bpf)


def _landlock(layers: Layers) -> None:
    abi = landlock.abi_version()
    if abi <= 0:
        for name in ("landlock-fs", "landlock-net", "landlock-scope"):
            layers.off(name, "this kernel has no Landlock (Linux 5.13+ with landlock in the LSM list)")
        return
    try:
        enforced = landlock.restrict()
    except OSError as exc:
        for name in ("landlock-fs", "landlock-net", "landlock-scope"):
            layers.off(name, f"refused: {exc.strerror or exc}")
        return
    for name, needs in (("landlock-fs", 1), ("landlock-net", 4), ("landlock-scope", 6)):
        if name in enforced:
            layers.on(name, enforced[name])
        else:
            layers.off(name, f"this kernel's Landlock ABI is {abi}; this layer needs ABI {needs}")


def confine_batch(batch_filter: seccomp.CompiledFilter | None) -> None:
    """In a freshly forked batch process, before any validator runs: stack the batch seccomp filter."""
    if batch_filter is not None:
        batch_filter.install()
