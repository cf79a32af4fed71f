"""The validator sandbox as a normal user: the layers come from a user namespace, Landlock and seccomp.

When the tests run as root, the probe runs as `nobody` through setpriv (if the interpreter or the checkout lives
under folders `nobody` cannot enter, such as /root or a private temporary folder, a private mount namespace shows
what is needed of them through a tmpfs laid over each).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.security.conftest import Listener

REPO = Path(__file__).resolve().parents[2]
NOBODY = 65534


def _blocked(path: Path) -> list[Path]:
    """Ancestors of `path` that others cannot enter."""
    return [p for p in path.parents if p.exists() and not os.stat(p).st_mode & 0o001]


def as_nobody(argv: list[str]) -> list[str] | None:
    """A command line that runs `argv` as uid nobody, or None when this machine cannot."""
    if os.geteuid() != 0:
        return argv
    if not (shutil.which("setpriv") and shutil.which("unshare")):
        return None
    setpriv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all", "--"]
    needed = [Path(sys.base_prefix), Path(sys.prefix), Path(os.path.realpath(sys.executable)), REPO]
    blocked = {b for p in needed for b in _blocked(p)}
    if not blocked:
        return [*setpriv, *argv]
    # Show each blocked folder's needed children through a world-readable tmpfs laid over it, in a private mount
    # namespace (outermost first: an inner blocked folder is then reached through the outer one's binds).
    script, kept = ["set -e", "keep=$(mktemp -d)"], 0
    for folder in sorted(blocked, key=lambda p: len(p.parts)):
        children = sorted({folder / p.relative_to(folder).parts[0] for p in needed if folder in p.parents})
        made = [("mkdir" if child.is_dir() else "touch", shlex.quote(str(child))) for child in children]
        for i, (make, child) in enumerate(made, start=kept):
            script += [f"{make} $keep/{i}", f"mount --bind {child} $keep/{i}"]
        script.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(folder))}")
        for i, (make, child) in enumerate(made, start=kept):
            script += [f"{make} {child}", f"mount --bind $keep/{i} {child}"]
        kept += len(made)
    script.append('exec "$@"')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "; ".join(script), "sh", *setpriv, *argv]


def test_the_sandbox_contains_an_escape_when_run_by_a_normal_user(open_dir: Path) -> None:
    listener = Listener()
    (open_dir / "secret.txt").write_text("s3cr3t-of-root")
    (open_dir / "secret.txt").chmod(0o644)
    command = as_nobody([sys.executable, "-m", "tests.security.as_user_probe", str(open_dir), str(listener.port)])
    if command is None:
        pytest.skip("cannot run a process as an unprivileged user here (needs setpriv and unshare as root)")
    try:
        done = subprocess.run(command, cwd=REPO, env={"PATH": os.defpath, "PYTHONPATH": str(REPO)},
                              capture_output=True, text=True, timeout=120)
        time.sleep(0.3)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    assert probe["uid"] != 0
    # Effects, seen from outside.
    assert not (open_dir / "created.txt").exists() and not (open_dir / "executed.txt").exists()
    assert listener.connections == 0 and listener.received == []
    assert "s3cr3t-of-root" not in json.dumps(probe["results"])
    assert probe["results"]["plain"] == [True, None]
    assert probe["results"]["fork"][0] is False
    # What a normal user gets on a kernel that allows it (this one: user namespaces, Landlock, seccomp).
    layers = probe["layers"]
    for name in ("landlock-fs", "seccomp", "unprivileged-identity"):
        assert layers[name], layers
    if layers.get("user-namespace"):
        assert layers["network-namespace"] and layers["pid-namespace"] and layers["empty-root"]


def test_a_normal_user_without_user_namespaces_keeps_landlock_and_seccomp(open_dir: Path) -> None:
    """docs/scoring.md: without user namespaces there is no network, IPC or PID namespace and no empty root,
    but Landlock still denies files and TCP and seccomp still denies sockets, exec and fork."""
    listener = Listener()
    (open_dir / "secret.txt").write_text("s3cr3t-of-root")
    (open_dir / "secret.txt").chmod(0o644)
    probe_argv = [sys.executable, "-m", "tests.security.as_user_probe", str(open_dir), str(listener.port)]
    command = as_nobody([sys.executable, "-m", "tests.security.no_userns", *probe_argv])
    if command is None:
        pytest.skip("cannot run a process as an unprivileged user here (needs setpriv and unshare as root)")
    try:
        done = subprocess.run(command, cwd=REPO, env={"PATH": os.defpath, "PYTHONPATH": str(REPO)},
                              capture_output=True, text=True, timeout=120)
        time.sleep(0.3)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr[-2000:]
    probe = json.loads(done.stdout.strip().splitlines()[-1])
    layers = probe["layers"]
    assert probe["uid"] != 0
    assert not layers.get("user-namespace") and not layers["network-namespace"], layers  # the restriction held
    assert layers["landlock-fs"] and layers["seccomp"], layers
    assert not (open_dir / "created.txt").exists() and not (open_dir / "executed.txt").exists()
    assert listener.connections == 0 and listener.received == []
    assert "s3cr3t-of-root" not in json.dumps(probe["results"])
    assert probe["results"]["plain"] == [True, None]
    assert probe["results"]["fork"][0] is False
