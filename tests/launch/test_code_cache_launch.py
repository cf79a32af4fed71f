"""A server whose episodes run in processes of their own takes its environment module's code from the cache file
the launcher writes (render/codecache.py), only while that file is current: shown by what its episodes do."""

from __future__ import annotations

import hashlib
import json
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


# Each call of list_orders answers how many calls this process has served: 1 in a fresh episode process.
COUNTING = ("\n_CALLS = [0]\n_LISTED = MiniShop.list_orders\n\n\ndef _counted(self, **kw):\n    _CALLS[0] += 1\n"
            "    return {'success': True, 'data': _CALLS[0]}\n\n\nMiniShop.list_orders = _counted\n")


async def _counts(folder: Path) -> list[object]:
    """list_orders in two episodes, one after the other, of one server started with episode_process="auto"."""
    seen = []
    async with launch_server(str(folder), transport="pipe", scenarios=[]) as server:
        for _ in range(2):
            async with server.episode() as episode:
                seen.append(read_result(await episode.call_tool("list_orders", {})).value.get("data"))
    return seen


@pytest.mark.parametrize("source", ["envscaler-import", "hand-authored"])
async def test_a_planted_facts_file_cannot_lift_an_environment_s_isolation(tmp_path: Path, source: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment's kept facts (catalog/hashed.py, in the user cache) say whether its code is hand-authored,
    whose episodes then share one process. A file planted there saying so for an imported environment changes
    nothing: its episodes still run in processes of their own (each call below is its process's first). The
    control: a skeleton that is hand-authored shares one process, so the test tells the two apart."""
    from envscaler_mcp.catalog import hashed

    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path / "cache"))
    data = json.loads((FIXTURE / "skeleton.json").read_text())
    data["class_source"] += COUNTING
    data["provenance"]["source"] = source
    folder = tmp_path / "environments" / "mini_shop"
    folder.mkdir(parents=True)
    (folder / "skeleton.json").write_text(json.dumps(data), encoding="utf-8")
    facts = hashed.skeleton_facts(str(folder))
    assert facts.source == source
    kept = hashed._stored(hashlib.sha256((folder / "skeleton.json").read_bytes()).digest(), "skeleton-facts")
    assert kept is not None and kept.with_suffix(".json").is_file()
    kept.with_suffix(".json").write_text(facts.model_copy(update={"source": "hand-authored"}).model_dump_json(),
                                         encoding="utf-8")
    monkeypatch.setattr(hashed, "_facts", {})  # a later process: only the planted file remains
    assert await _counts(folder) == ([1, 1] if source == "envscaler-import" else [1, 2])


async def test_a_damaged_code_file_in_a_render_cache_folder_is_not_run(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The launcher no longer checks a render-cache folder's code file at each start, so the episode zygote's own
    check is what stands: a file torn, or whole but planted with other code for another source, is not run
    (episodes answer from the module's source)."""
    from envscaler_mcp.render.cache import rendered

    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path / "cache"))
    out, _ = rendered(EnvSkeleton.model_validate_json((FIXTURE / "skeleton.json").read_text()), [])
    [module] = list(out.glob("*_mcp/environment.py"))
    target = code_file(out, module.parent.name)
    whole = target.read_bytes()
    target.write_bytes(whole[:-50])  # torn
    assert isinstance(await _listed(out), list)
    runtime = _runtime_codecache()
    other = module.read_bytes() + b"\n# another source\n"
    body = marshal.dumps((str(module), runtime.compile_environment(other.decode() + PLANTED, str(module)), []))
    target.write_bytes(bytes(runtime._header(other, str(module))) + hashlib.sha256(body).digest() + body)
    assert isinstance(await _listed(out), list)  # made for another source: compiled from this one instead
    source = module.read_bytes()  # the control: the same planted code made for this very source is run
    body = marshal.dumps((str(module), runtime.compile_environment(source.decode() + PLANTED, str(module)), []))
    target.write_bytes(bytes(runtime._header(source, str(module))) + hashlib.sha256(body).digest() + body)
    assert await _listed(out) == "from the cache file"
