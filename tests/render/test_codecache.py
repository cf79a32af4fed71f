"""The environment module compiled once (render/codecache.py and the runtime's codecache.py): a file is used only
when it was written for exactly this source and path and is whole; what it gives is what compiling gives."""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path

import pytest

from envscaler_mcp.render.codecache import _runtime_codecache, code_file, write_code_cache

SOURCE = b'import json\nimport datetime as dt\nfrom collections import OrderedDict\n\nclass Env:\n    x: Later = 1\n'


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "pkg_mcp").mkdir()
    (tmp_path / "pkg_mcp" / "environment.py").write_bytes(SOURCE)
    return tmp_path


def _module(folder: Path) -> Path:
    return folder / "pkg_mcp" / "environment.py"


def _forged(source: bytes, filename: str, code_source: str) -> bytes:
    """A whole file for `source` at `filename` whose code is compiled from `code_source` (what a cache hit gives
    can then be told from what compiling the source gives)."""
    runtime = _runtime_codecache()
    body = marshal.dumps((filename, runtime.compile_environment(code_source, filename), ["json"]))
    return bytes(runtime._header(source, filename)) + hashlib.sha256(body).digest() + body


def test_the_cached_code_is_what_the_zygote_compiled(folder: Path) -> None:
    """Same code object as the zygote's compile before the cache (inheriting its module's future flags), and the
    same standard library names as its scan."""
    runtime = _runtime_codecache()
    assert write_code_cache(folder, "pkg_mcp")
    origin = str(_module(folder))
    code, names = runtime.prepared(origin)
    before = compile(SOURCE.decode(), origin, "exec")  # this module has `from __future__ import annotations`, as zygote.py
    assert marshal.dumps(code) == marshal.dumps(before)
    assert names == ["collections", "datetime", "json"] == runtime.stdlib_imports(SOURCE.decode())
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["Env"].__annotations__ == {"x": "Later"}  # type: ignore[attr-defined]


def test_a_current_file_is_used_and_kept(folder: Path) -> None:
    runtime = _runtime_codecache()
    origin = str(_module(folder))
    code_file(folder, "pkg_mcp").parent.mkdir()
    code_file(folder, "pkg_mcp").write_bytes(_forged(SOURCE, origin, "FROM_CACHE = True\n"))
    code, names = runtime.prepared(origin)
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace.get("FROM_CACHE") is True and names == ["json"]
    assert write_code_cache(folder, "pkg_mcp")  # current: left as it is
    assert b"FROM_CACHE" in code_file(folder, "pkg_mcp").read_bytes()


@pytest.mark.parametrize("damage", ["stale source", "moved", "torn", "flipped byte", "other python", "empty"])
def test_a_stale_or_torn_file_is_not_used_and_is_rewritten(folder: Path, damage: str) -> None:
    runtime = _runtime_codecache()
    origin = str(_module(folder))
    forged = _forged(SOURCE, origin, "FROM_CACHE = True\n")
    if damage == "stale source":  # the module changed since the file was written
        _module(folder).write_bytes(SOURCE + b"CHANGED = 1\n")
    elif damage == "moved":  # written for the module at another path
        forged = _forged(SOURCE, origin + "x", "FROM_CACHE = True\n")
    elif damage == "torn":
        forged = forged[:-100]
    elif damage == "flipped byte":
        forged = forged[:-10] + bytes([forged[-10] ^ 1]) + forged[-9:]
    elif damage == "other python":
        start = len(b"envscaler-code 1\n")
        forged = forged[:start] + b"\0\0\0\0" + forged[start + 4:]
    else:
        forged = b""
    code_file(folder, "pkg_mcp").parent.mkdir()
    code_file(folder, "pkg_mcp").write_bytes(forged)
    code, _names = runtime.prepared(origin)
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert "FROM_CACHE" not in namespace and "Env" in namespace
    assert (namespace.get("CHANGED") == 1) == (damage == "stale source")
    assert write_code_cache(folder, "pkg_mcp")  # the launcher replaces it with a current one
    assert runtime.load(code_file(folder, "pkg_mcp").read_bytes(), _module(folder).read_bytes(), origin) is not None
    assert b"FROM_CACHE" not in code_file(folder, "pkg_mcp").read_bytes()


def test_a_module_that_does_not_compile_gets_no_file(folder: Path) -> None:
    """Left to the server, which reports the error as before."""
    _module(folder).write_bytes(b"def broken(:\n")
    assert not write_code_cache(folder, "pkg_mcp")
    assert not code_file(folder, "pkg_mcp").exists()
    with pytest.raises(SyntaxError):
        _runtime_codecache().prepared(str(_module(folder)))


def test_a_missing_module_or_unwritable_folder_is_left_alone(tmp_path: Path, folder: Path) -> None:
    assert not write_code_cache(tmp_path / "nowhere", "pkg_mcp")
    (folder / "pkg_mcp" / "__pycache__").write_text("a file where the folder would be")
    assert not write_code_cache(folder, "pkg_mcp")


def test_a_rendering_into_the_cache_comes_with_its_file_for_the_folder_it_becomes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written in the staging folder, compiled for the folder's final path: in place, the folder is complete (the
    cache's size accounting relies on a folder never changing once in place) and the launcher keeps the file."""
    from envscaler_mcp.render.cache import rendered
    from tests.render.fixture_env import scenarios, skeleton

    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path / "cache"))
    out, _files = rendered(skeleton(), scenarios())
    [package] = [p.name for p in out.glob("*_mcp")]
    module = out.resolve() / package / "environment.py"
    written = code_file(out, package).read_bytes()
    assert _runtime_codecache().load(written, module.read_bytes(), str(module)) is not None
    assert write_code_cache(out.resolve(), package)
    assert code_file(out, package).read_bytes() == written  # current: not written again


_IMPORT_RUNTIME = """
import importlib, sys
from importlib import _bootstrap_external as external
compiled = []
original = external.SourceLoader.source_to_code
def counting(self, data, path, *, _optimize=-1):
    compiled.append(path)
    return original(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = counting
sys.path.append(sys.argv[1])
for name in sys.argv[3:]:
    importlib.import_module(f"{sys.argv[2]}.runtime.{name}")
print(sum("/runtime/" in p for p in compiled), importlib.import_module(f"{sys.argv[2]}.runtime.framing").MARK)
"""


def test_the_runtime_is_imported_from_its_bytecode_and_a_changed_module_from_its_source(tmp_path: Path) -> None:
    """The episode zygote (a fresh interpreter that may not write the folder) imports the runtime without compiling
    it once the launcher wrote its .pyc files; a module changed since is compiled from its source, as before."""
    import subprocess
    import sys

    from envscaler_mcp.render.codecache import write_runtime_bytecode
    from envscaler_mcp.render.engine import server_templates

    runtime = tmp_path / "pkg_mcp" / "runtime"
    runtime.mkdir(parents=True)
    (tmp_path / "pkg_mcp" / "__init__.py").write_text("")
    for module in (server_templates() / "runtime").glob("*.py"):
        (runtime / module.name).write_bytes(module.read_bytes())
    (runtime / "framing.py").write_text((runtime / "framing.py").read_text() + "\nMARK = 'first'\n")

    def imported() -> str:
        return subprocess.run([sys.executable, "-B", "-s", "-P", "-c", _IMPORT_RUNTIME, str(tmp_path), "pkg_mcp",
                               "zygote", "framing"], capture_output=True, text=True, check=True).stdout.split()

    assert imported()[0] != "0"  # no bytecode yet: compiled at every start (-B: none written either)
    assert write_runtime_bytecode(tmp_path, "pkg_mcp") == len(list(runtime.glob("*.py")))
    assert imported() == ["0", "first"]
    assert write_runtime_bytecode(tmp_path, "pkg_mcp") == 0  # current: left as it is
    (runtime / "framing.py").write_text((runtime / "framing.py").read_text().replace("'first'", "'second'"))
    assert imported() == ["1", "second"]  # the stale file is not used
    assert write_runtime_bytecode(tmp_path, "pkg_mcp") == 1
    assert imported() == ["0", "second"]
