"""Servers forked from the harness's server zygote (launch/server_zygote.py) are contained as fresh ones are.

The zygote runs no environment code and holds nothing secret; each server it forks applies its own OS layers and
limits. Proved by effect: environment code aimed at the zygote leaves it alive, with its limits and priority,
and still forking servers; the admin token is nowhere in the zygote's memory; a server's limits are its own
(another server from the same zygote, and the zygote, keep theirs); a server whose runtime differs starts as a
fresh process; servers end with the zygote. The attacks of test_server_attacks.py (files, network, exec, fork)
run on zygote-forked servers there (pipe, http and stdio start from the zygote by default).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import signal
import sys
import time
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

from envscaler_mcp._outcome import read_result
from envscaler_mcp.isolation.server_zygote import _use_compiled
from envscaler_mcp.launch import launch_server, server_zygote
from envscaler_mcp.launch.server_zygote import ZYGOTE_ENV, _Shared
from tests.security.test_server_attacks import malicious_server
from tests.security.test_server_limits import attack_module
from tests.security.test_validator_limits_ipc import cpu_limit

pytestmark = pytest.mark.anyio


def ancestors(pid: int) -> list[int]:
    """The parent chain of a process, as /proc shows it from outside."""
    chain = []
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


def limit(pid: int, name: str) -> str:
    """A process's soft limit `name` ('Max address space', ...) from /proc/PID/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith(name):
            return line[len(name):].split()[0]
    raise AssertionError(f"no {name} for {pid}")


def zygote_pid() -> int:
    assert _Shared.zygote is not None, _Shared.failed
    return _Shared.zygote.pid


@pytest.fixture(autouse=True)
def zygote_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ZYGOTE_ENV, raising=False)


@pytest.mark.parametrize("transport", ["pipe", "http"])
async def test_a_forked_server_gets_the_layers_of_a_fresh_one(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    reports, parents = {}, {}
    for mode in ("fresh", "zygote"):
        monkeypatch.setenv(ZYGOTE_ENV, "off" if mode == "fresh" else "on")
        async with launch_server("clinic_appointments", transport=transport) as server:  # type: ignore[arg-type]
            async with server.episode() as ep:
                assert not (await ep.call_tool("list_doctors", {})).is_error
            assert server.isolation is not None
            reports[mode] = [(layer.name, layer.active, re.sub(r"uid \d+", "uid N", layer.detail))
                             for layer in server.isolation.layers]  # a uid of its own, drawn per server
            parents[mode] = ancestors(server.pid)  # type: ignore[attr-defined]
    assert reports["zygote"] == reports["fresh"]
    assert zygote_pid() in parents["zygote"] and zygote_pid() not in parents["fresh"]
    assert parents["fresh"][1] == os.getpid()  # the serving process's parent waits in its PID namespace


async def test_environment_code_aimed_at_the_zygote_does_not_reach_it(tmp_path: Path, open_dir: Path) -> None:
    async with launch_server("clinic_appointments", transport="pipe"):
        pass  # the zygote is up
    zygote = zygote_pid()
    limits, nice = cpu_limit(zygote), os.getpriority(os.PRIO_PROCESS, zygote)
    server_dir = malicious_server(tmp_path, open_dir, 0, code=attack_module(zygote, kill_signal=signal.SIGKILL))
    async with launch_server(server_dir, transport="pipe", episode_process="shared") as server:
        assert zygote in ancestors(server.pid)  # type: ignore[attr-defined]
        async with server.episode() as ep:
            found = read_result(await ep.call_tool("list_orders", {})).value["data"]  # type: ignore[index]
    for attack in ("prlimit", "nice", "signal"):
        assert found[attack].startswith("refused"), json.dumps(found)
    assert found["proc"] == "[]" or found["proc"].startswith("refused"), found["proc"]
    assert _Shared.zygote is not None and _Shared.zygote.process.poll() is None  # alive
    assert cpu_limit(zygote) == limits and os.getpriority(os.PRIO_PROCESS, zygote) == nice
    async with launch_server("clinic_appointments", transport="pipe") as again:  # and still forking servers
        assert zygote in ancestors(again.pid)  # type: ignore[attr-defined]


async def test_limits_are_each_servers_own_and_the_token_never_reaches_the_zygote(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Shared, "zygote", None)  # a zygote of this test's own: started for the first server
    monkeypatch.setattr(_Shared, "failed", None)
    async with launch_server("clinic_appointments", transport="http", max_memory_mb=512, max_cpu_s=120) as small:
        async with launch_server("clinic_appointments", transport="http") as default:
            zygote = zygote_pid()
            assert zygote in ancestors(small.pid) and zygote in ancestors(default.pid)  # type: ignore[attr-defined]
            assert limit(small.pid, "Max address space") == str(512 << 20)  # type: ignore[attr-defined]
            assert limit(small.pid, "Max cpu time") == "120"  # type: ignore[attr-defined]
            assert limit(default.pid, "Max address space") == str(2048 << 20)  # type: ignore[attr-defined]
            assert limit(zygote, "Max address space") == "unlimited" == limit(zygote, "Max cpu time")
            tokens = [small.token.encode(), default.token.encode()]  # type: ignore[attr-defined]
            memory = readable_memory(zygote)
            assert len(memory) > 1 << 20  # the scan read the zygote's heap
            assert not any(token in memory for token in tokens)
    assert _Shared.zygote is not None
    _Shared.zygote.close()


def readable_memory(pid: int) -> bytes:
    """The writable private mappings of a process (heap, stacks, Python objects), read from outside."""
    chunks = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            match = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
            if not match or "[vvar" in line or "[vsyscall" in line:
                continue
            start, end = int(match[1], 16), int(match[2], 16)
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except OSError:
                continue
    return b"".join(chunks)


async def test_a_server_with_another_runtime_starts_fresh(tmp_path: Path, open_dir: Path) -> None:
    server_dir = malicious_server(tmp_path, open_dir, 0, code="\n")
    [runtime] = list(server_dir.glob("*_mcp/runtime"))
    with (runtime / "episode.py").open("a") as module:
        module.write("\n# a runtime of another version\n")
    async with launch_server(server_dir, transport="pipe", episode_process="shared") as server:
        async with server.episode() as ep:
            assert not (await ep.call_tool("list_orders", {})).is_error
        chain = ancestors(server.pid)  # type: ignore[attr-defined]
    # started by this process, not forked: the serving process's parent waits in its PID namespace, and its
    # parent is this process (a forked server's chain has the zygote there, which is this process's child too)
    assert chain[1] == os.getpid() and (_Shared.zygote is None or _Shared.zygote.pid not in chain)


async def test_servers_end_with_the_zygote(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Shared, "zygote", None)  # a zygote of this test's own, which it kills
    monkeypatch.setattr(_Shared, "failed", None)
    async with launch_server("clinic_appointments", transport="http") as server:
        zygote = _Shared.zygote
        assert zygote is not None
        serving = server.pid  # type: ignore[attr-defined]
        assert zygote.pid in ancestors(serving)
        zygote.process.kill()
        zygote.process.wait()
        deadline = time.monotonic() + 60
        while Path(f"/proc/{serving}").exists() and "Z" not in Path(f"/proc/{serving}/stat").read_text().split()[2]:
            assert time.monotonic() < deadline, "the server outlived its zygote"
            time.sleep(0.05)
    async with launch_server("clinic_appointments", transport="pipe") as fresh:  # the next one starts fresh
        assert ancestors(fresh.pid)[1] == os.getpid()  # type: ignore[attr-defined]
    zygote.close()


def test_only_a_byte_identical_source_gets_the_precompiled_code(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The zygote's compiled runtime replaces a server module's compile only for the same bytes (here the cache
    is planted with other code, so that its use shows): a module differing by one byte is compiled from its own
    source, and the code carries the server's file name."""
    source = b"import sys\nVALUE = 'from its source'\nFILE = sys._getframe().f_code.co_filename\n"
    planted = compile(source.replace(b"from its source", b"precompiled"), "<runtime>", "exec")
    monkeypatch.setattr(SourceFileLoader, "source_to_code", SourceFileLoader.source_to_code)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    _use_compiled({hashlib.sha256(source).digest(): planted})
    (tmp_path / "zygote_same_mod.py").write_bytes(source)
    (tmp_path / "zygote_other_mod.py").write_bytes(source + b"\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    same, other = importlib.import_module("zygote_same_mod"), importlib.import_module("zygote_other_mod")
    assert same.VALUE == "precompiled" and same.FILE == str(tmp_path / "zygote_same_mod.py")
    assert other.VALUE == "from its source"
    for name in ("zygote_same_mod", "zygote_other_mod"):
        sys.modules.pop(name, None)


def fd_links(pid: int) -> set[str]:
    """What a process's descriptors refer to (pipe:[inode], socket:[inode], paths; not the anonymous kinds,
    whose names say no more than `anon_inode:[eventpoll]`), read from /proc."""
    links = set()
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            links.add(os.readlink(entry))
        except OSError:
            continue
    return {link for link in links if not link.startswith("anon_inode:")}


async def test_a_forked_server_holds_no_descriptor_of_the_zygote() -> None:
    async with launch_server("clinic_appointments", transport="http") as first:
        async with launch_server("clinic_appointments", transport="pipe") as second:
            zygote = zygote_pid()
            try:
                held = fd_links(zygote)
                servers = {pid: fd_links(pid) for server in (first, second)
                           for pid in (server.pid, ancestors(server.pid)[0])}  # type: ignore[attr-defined]
            except PermissionError:
                pytest.skip("this user cannot list another process's descriptors")
    assert any(link.startswith("socket:") for link in held)  # its channel, which no server holds
    for pid, links in servers.items():
        assert links and links & held <= {"/dev/null"}, (pid, links & held)
    assert not servers[second.pid] & servers[first.pid] - {"/dev/null"}  # type: ignore[attr-defined]


def test_a_runtime_folder_is_hashed_again_only_when_a_module_changed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Which start a server gets rests on its runtime's digest, kept per folder between servers: a module
    rewritten in place, replaced by another file or added is seen; an unchanged folder is not read again."""
    folder = tmp_path / "runtime"
    folder.mkdir()
    (folder / "a.py").write_text("A = 1\n")
    (folder / "b.py").write_text("B = 1\n")
    hashed: list[Path] = []
    digest = server_zygote.runtime_digest

    def counted(path: Path) -> str:
        hashed.append(path)
        return digest(path)

    monkeypatch.setattr(server_zygote, "_digests", {})
    monkeypatch.setattr(server_zygote, "runtime_digest", counted)
    first = server_zygote._known_digest(folder)
    assert server_zygote._known_digest(folder) == first and len(hashed) == 1
    b = folder / "b.py"
    old = b.stat()
    b.write_text("B = 2\n")  # the same size, in place: a later mtime (set here, as a clock tick may not pass)
    os.utime(b, ns=(old.st_atime_ns, old.st_mtime_ns + 1_000_000))
    second = server_zygote._known_digest(folder)
    assert second != first and len(hashed) == 2
    (folder / "new.tmp").write_text("B = 3\n")  # another file renamed over it, with the same size and mtime
    os.utime(folder / "new.tmp", ns=(b.stat().st_atime_ns, b.stat().st_mtime_ns))
    os.replace(folder / "new.tmp", b)
    third = server_zygote._known_digest(folder)
    assert third not in (first, second) and len(hashed) == 3
    (folder / "c.py").write_text("C = 1\n")
    assert server_zygote._known_digest(folder) not in (first, second, third) and len(hashed) == 4
    assert server_zygote._known_digest(folder) == digest(folder) and len(hashed) == 4
