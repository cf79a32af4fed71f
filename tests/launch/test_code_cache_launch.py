"""A server whose episodes run in processes of their own takes its environment module's code from the cache file
the launcher writes (render/codecache.py), only while that file is current: shown by what its episodes do."""

from __future__ import annotations

import hashlib
import marshal
from pathlib import Path

import pytest

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import launch_server
from envscaler_mcp.render import render_server
from envscaler_mcp.render.codecache import _runtime_codecache, code_file
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"
# What a file made for the module's source, but holding other code, makes list_orders answer.
PLANTED = "\nMiniShop.list_orders = lambda self, **kw: {'success': True, 'data': 'from the cache file'}\n"


def _server(tmp_path: Path) -> tuple[Path, Path]:
    skeleton = EnvSkeleton.model_validate_json((FIXTURE / "skeleton.json").read_text())
    scenarios = [Scenario.model_validate_json(line) for line in (FIXTURE / "scenarios.jsonl").read_text().splitlines()
                 if line.strip()]
    out = render_server(skeleton, scenarios, tmp_path / "server").resolve()
    [module] = list(out.glob("*_mcp/environment.py"))
    return out, module


def _plant(module: Path) -> Path:
    """A whole, current cache file for `module` whose code is the module's plus PLANTED."""
    runtime = _runtime_codecache()
    source = module.read_bytes()
    body = marshal.dumps((str(module), runtime.compile_environment(source.decode() + PLANTED, str(module)), []))
    target = code_file(module.parents[1], module.parent.name)
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(bytes(runtime._header(source, str(module))) + hashlib.sha256(body).digest() + body)
    return target


async def _listed(folder: Path) -> object:
    async with launch_server(folder, transport="pipe", episode_process="fork") as server:
        async with server.episode() as episode:
            result = await episode.call_tool("list_orders", {})
            assert not result.is_error
            return read_result(result).value.get("data")


async def test_the_launcher_writes_the_file_and_a_current_one_is_what_episodes_run(tmp_path: Path) -> None:
    folder, module = _server(tmp_path)
    plain = await _listed(folder)
    assert isinstance(plain, list) and plain  # the fixture's orders
    target = code_file(folder, module.parent.name)
    runtime = _runtime_codecache()
    assert runtime.load(target.read_bytes(), module.read_bytes(), str(module)) is not None  # written at launch

    _plant(module)
    assert await _listed(folder) == "from the cache file"  # the server used the file, not the source


async def test_a_stale_or_torn_file_is_not_run(tmp_path: Path) -> None:
    folder, module = _server(tmp_path)
    target = _plant(module)
    target.write_bytes(target.read_bytes()[:-50])  # torn: the launcher replaces it before the server starts
    assert isinstance(await _listed(folder), list)
    _plant(module)
    module.write_text(module.read_text() + "\nSTALE_CHECK = 1\n")  # the source changed since
    assert isinstance(await _listed(folder), list)
    assert b"STALE_CHECK" in target.read_bytes()  # rewritten for the new source


async def test_a_render_cache_folder_is_launched_as_it_was_put_in_place(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of the render cache had its code compiled before it was renamed in place, and is never changed
    after (the cache's accounting relies on it): the launcher does not check its code files again (a read of
    every runtime module and a hash, at each of a catalog's server starts), and its episodes run. A folder
    elsewhere still gets them checked and written."""
    from envscaler_mcp.launch import servers
    from envscaler_mcp.render.cache import in_render_cache, rendered

    checked: list[Path] = []
    real = servers.write_code_cache
    monkeypatch.setattr(servers, "write_code_cache",
                        lambda folder, package: checked.append(Path(folder)) or real(folder, package))
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path / "cache"))
    skeleton = EnvSkeleton.model_validate_json((FIXTURE / "skeleton.json").read_text())
    out, _ = rendered(skeleton, [])
    assert in_render_cache(out) and not in_render_cache(tmp_path)
    [module] = list(out.glob("*_mcp/environment.py"))
    assert code_file(out, module.parent.name).is_file() and list(out.glob("*_mcp/runtime/__pycache__/*.pyc"))

    def files() -> dict[str, tuple[int, int, int]]:
        return {str(p.relative_to(out)): (p.stat().st_ino, p.stat().st_size, p.stat().st_mtime_ns)
                for p in out.rglob("*") if p.is_file()}

    before = files()
    assert isinstance(await _listed(out), list)
    assert checked == [] and files() == before  # not checked, and nothing written, replaced or added
    folder, _ = _server(tmp_path)
    assert isinstance(await _listed(folder), list)
    assert checked == [folder]
