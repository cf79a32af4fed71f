"""Run a Python module under the OS layers, in this process (nothing is executed after them):

    python -s -P -m envscaler_mcp.isolation.confine_server --read DIR [--read DIR ...] [--path DIR ...]
           [--report FILE] [--memory-mb N] [--cpu-s N] [--threads N] [--forks] [--off] -- -m PACKAGE [ARGS ...]

How launched environment servers start. Before PACKAGE is imported, this process gives itself:

* new network, IPC and PID namespaces (a user namespace first when not root): no interface, no route out,
  no process outside its own. A listening socket the launcher created and handed down keeps serving the
  host's loopback. With a PID namespace this process forks: the child (PID 1 there) goes on, the parent
  only waits for it and passes on SIGTERM and SIGHUP (isolation/namespaces.py `become_pid_one`).
* no capabilities; as root, a user id of its own (isolation/namespaces.py `become_unique_user`).
* hard limits (isolation/limits.py): `--memory-mb` of address space, `--cpu-s` of CPU time, `--threads`
  threads (where the kernel can count them for this server alone), no core dumps.
* Landlock: files may only be read, and only beneath the `--read` folders (the server package), Python's
  own folders and the system's shared libraries; no TCP bind or connect; no signal beyond the sandbox.
* seccomp: no exec, no new processes (threads are fine), no new sockets, no tracing, signals to itself only.
  With `--forks` the server may fork its episode processes (templates/server/runtime/forked.py), and each of
  those loads a further filter (`seccomp.episode_filter`: no new process, no signal).

`--path DIR` is put first on the module search path only after the layers, so that nothing in DIR is
imported before them (start Python with `-P` and keep DIR out of PYTHONPATH for the same reason).
`--report FILE` receives {layer: [active, detail]} once the layers are in place (opened before them).
A layer the kernel refuses is recorded there and the server still starts. Standard library + pyseccomp.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import sysconfig
from typing import Any

from envscaler_mcp.isolation import episode_zygote, landlock, limits, namespaces, seccomp, zygote_template

_SYSTEM_READ = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache", "/etc/localtime",
                "/usr/share/zoneinfo", "/dev/null", "/dev/urandom")


def python_folders() -> list[str]:
    """Where this interpreter reads its standard library and installed packages from."""
    paths = sysconfig.get_paths()
    found = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    found.update({sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))})
    return sorted(p for p in found if os.path.exists(p))


def _identity(table: dict[str, list[Any]], seed: int) -> bool:
    """Drop privileges; True when this process now has a user id no other process holds or shares its count
    of processes with nobody (root: a uid of its own, from `seed`; a normal user: alone in a new user
    namespace)."""
    try:
        if os.geteuid() == 0:
            table["unprivileged-identity"] = [True, namespaces.become_unique_user(seed)]
            return True
        table["unprivileged-identity"] = [True, namespaces.drop_capabilities()]
        return bool(table.get("user-namespace", [False])[0])
    except OSError as exc:
        table["unprivileged-identity"] = [False, f"could not drop privileges ({exc})"]
        return False


_episode_filter: list[bytes] = []  # with --forks: what each episode process loads (handed to the server)
_zygote: list[tuple[int, int]] = []  # with --forks: the episode zygote started here (its channel, its pid)


def confine(read: list[str], memory_mb: int = 0, cpu_s: int = 0, threads: int = 0,
            forks: bool = False, zygote_of: tuple[str, list[str]] | None = None,
            template_fd: int | None = None) -> dict[str, list[Any]]:
    """Apply every layer this kernel allows and the limits; return {layer: [active, detail]}. With `forks`
    and `zygote_of` (the server package and its search path), the episode zygote is started between the
    namespaces and the layers that forbid exec: forked into this server's namespaces by the zygote template
    on `template_fd` (zygote_template.py) when there is one and this server has its own PID namespace, or else
    as an interpreter of its own (episode_zygote.py). `template_fd` is closed before the layers."""
    table: dict[str, list[Any]] = {"clean-environment": [True, "only the variables the launcher allowed"]}
    table.update(limits.apply(memory_mb, cpu_s))  # before the fork: the waiting parent has them too
    active, refused = namespaces.isolate(pid=True)
    table.update({name: [True, detail] for name, detail in active.items()})
    table.update({name: [False, detail] for name, detail in refused.items()})
    seed, alive = namespaces.become_pid_one() if "pid-namespace" in active else (os.getpid(), -1)
    try:  # built while libseccomp can still be found and loaded (before Landlock)
        syscalls: Any = seccomp.server_filter(os.getpid(), forks)
        if forks:
            _episode_filter[:] = [seccomp.compile_bpf(seccomp.episode_filter())]
    except OSError as exc:
        syscalls = f"refused: {exc.strerror or exc}"
    table.update(limits.cap_threads(threads, counted_alone=_identity(table, seed)))
    if alive >= 0:
        namespaces.stay_tied(alive)
    allowed = sorted({*read, *python_folders(), *_SYSTEM_READ})
    try:
        if forks and zygote_of is not None:
            template = template_fd if "pid-namespace" in active else None
            _start_zygote(zygote_of, allowed, syscalls, template)
    finally:
        if template_fd is not None:
            os.close(template_fd)
    try:
        enforced = landlock.restrict(read=allowed)
    except OSError as exc:
        enforced = {}
        reason = f"refused: {exc.strerror or exc}"
    else:
        reason = f"this kernel's Landlock ABI ({landlock.abi_version()}) is too old for it"
    for name in ("landlock-fs", "landlock-net", "landlock-scope"):
        table[name] = [True, enforced[name]] if name in enforced else [False, reason]
    if isinstance(syscalls, str):
        table["seccomp"] = [False, syscalls]
        return table
    try:
        landlock.set_no_new_privs()
        syscalls.load()
        table["seccomp"] = [True, "no exec, no new processes or sockets, no tracing, signals to itself only"
                            if not forks else "no exec, no new sockets, no tracing, signals to itself only; "
                            "new processes only for episodes, which can start no process or thread and signal "
                            "nothing"]
    except OSError as exc:
        table["seccomp"] = [False, f"refused: {exc.strerror or exc}"]
        return table
    if forks:  # environment code runs only in episode processes, which seccomp lets start no thread
        active, detail = table["thread-limit"]
        table["thread-limit"] = [True, "environment code starts no thread or process (it runs only in episode "
                                       "processes, under seccomp); the server's own: " + (detail if active else
                                       "uncapped, " + detail)]
    return table


def _start_zygote(zygote_of: tuple[str, list[str]], allowed: list[str], syscalls: Any,
                  template_fd: int | None) -> None:
    """Start the server's episode zygote: forked by the template (zygote_template.py) or spawned
    (episode_zygote.py); where neither can start it, the server forks its own."""
    package, paths = zygote_of
    try:
        zygote_bpf = None if isinstance(syscalls, str) else seccomp.compile_bpf(syscalls)
        episode_bpf = _episode_filter[0] if _episode_filter else None
        if template_fd is not None:
            try:
                _zygote[:] = [zygote_template.ask(template_fd, package, allowed, paths, zygote_bpf, episode_bpf)]
                return
            except OSError as exc:
                print(f"warning: the zygote template could not fork this server's episode zygote "
                      f"({exc.strerror or exc}); it is started on its own", file=sys.stderr, flush=True)
        namespaces.keep_reading_across_exec(True)  # it reads what the server reads, as the same user
        try:
            _zygote[:] = [episode_zygote.spawn(package, allowed, paths, zygote_bpf, episode_bpf)]
        finally:
            namespaces.keep_reading_across_exec(False)
    except OSError as exc:
        print(f"warning: the episode zygote could not start on its own ({exc.strerror or exc}); the server "
              "forks it", file=sys.stderr, flush=True)


def _hand_over(table: dict[str, list[Any]]) -> list[str]:
    """Arguments handing the server its episode zygote's channel, or else the episode filter: a pipe it reads
    once (the filter is a few hundred bytes, far below a pipe's buffer)."""
    if _zygote:
        fd, pid = _zygote[0]
        return ["--zygote-fd", str(fd), "--zygote-pid", str(pid)]
    if not _episode_filter or not table.get("seccomp", [False])[0]:
        return []
    read_end, write_end = os.pipe()
    os.write(write_end, _episode_filter[0])
    os.close(write_end)
    return ["--episode-filter-fd", str(read_end)]


def main(argv: list[str] | None = None) -> None:
    """Confine this process, then run the module given after `--` as `__main__`."""
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        raise SystemExit("usage: python -m envscaler_mcp.isolation.confine_server [options] -- -m PACKAGE [ARGS]")
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="envscaler_mcp.isolation.confine_server")
    parser.add_argument("--read", action="append", default=[], help="a folder the module may read")
    parser.add_argument("--path", action="append", default=[],
                        help="a folder put on the module search path once the layers are in place")
    parser.add_argument("--report", default=None, help="where to write the layers in force (JSON)")
    parser.add_argument("--memory-mb", type=int, default=0, help="address-space limit (MiB; 0: none)")
    parser.add_argument("--cpu-s", type=int, default=0, help="CPU-time limit of the process (s; 0: none)")
    parser.add_argument("--threads", type=int, default=0, help="most threads (0: no limit)")
    parser.add_argument("--forks", action="store_true",
                        help="the server may fork (one process per episode); each episode process forks nothing")
    parser.add_argument("--off", action="store_true", help="apply no layer but the limits (to measure their cost)")
    parser.add_argument("--template-fd", type=int, default=None,
                        help="the zygote template's channel (from the server zygote): forks the episode zygote")
    options = parser.parse_args(args[:split])
    rest = args[split + 1:]
    if len(rest) < 2 or rest[0] != "-m":
        raise SystemExit("envscaler_mcp.isolation.confine_server: give the module as `-- -m PACKAGE [ARGS]`")
    report = open(options.report, "w", encoding="utf-8") if options.report else None
    if options.off:
        if options.template_fd is not None:
            os.close(options.template_fd)
        table = {"clean-environment": [True, "only the variables the launcher allowed"],
                 **limits.apply(options.memory_mb, options.cpu_s)}
        for name in ("network-namespace", "ipc-namespace", "pid-namespace", "unprivileged-identity", "thread-limit",
                     "landlock-fs", "landlock-net", "landlock-scope", "seccomp"):
            table[name] = [False, "turned off (isolation disabled)"]
    else:
        package = rest[1].removesuffix(".__main__")
        table = confine([os.path.realpath(p) for p in options.read], options.memory_mb, options.cpu_s,
                        options.threads, options.forks, (package, [os.path.realpath(p) for p in options.path]),
                        options.template_fd)
    if report is not None:
        with report:
            report.write(json.dumps(table))
    sys.path[:0] = [os.path.realpath(p) for p in options.path]
    sys.argv = [rest[1], *rest[2:], *_hand_over(table)]
    runpy.run_module(rest[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # before the module took over its own Ctrl-C (while it was being imported)
        print("stopped (interrupted)", file=sys.stderr, flush=True)
        sys.exit(130)
