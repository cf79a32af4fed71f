"""Import at catalog scale: the environments wait in a spool on disk (interop/spool.py), so memory does not
grow with their number, and the files written equal the in-memory conversion's on the catalog bench's set
(benchmarks/catalog_scale_bench.py) read in an order that makes every skeleton come back from disk."""

from __future__ import annotations

import json
import random
import sys
import tracemalloc
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import save_scenarios, save_skeleton
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.interop.from_envscaler import import_envscaler
from envscaler_mcp.interop.spool import EnvSpool
from envscaler_mcp.interop.stream_import import stream_import

ROOT = Path(__file__).resolve().parents[2]
ES = ROOT / "tests" / "fixtures" / "envscaler"
PAD = 200_000  # bytes of comment added to each environment's class: a skeleton far larger than its scenario


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _bench_set(folder: Path, n: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from catalog_scale_bench import make_catalog
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    envs, scenarios, _, _ = make_catalog(n, 10, folder, None)
    return envs, scenarios


def test_the_bench_set_imports_as_the_in_memory_conversion_does(tmp_path: Path) -> None:
    envs, scenarios = _bench_set(tmp_path, 10)
    items = json.loads(scenarios.read_text(encoding="utf-8"))
    random.Random(3).shuffle(items)  # environments interleaved: most skeletons come back from the spool
    scenarios.write_text(json.dumps(items), encoding="utf-8")
    reference = import_envscaler(envs, scenarios)
    expected = tmp_path / "expected"
    for skeleton in reference.skeletons:
        save_skeleton(skeleton, expected / "environments")
        save_scenarios(reference.scenarios[skeleton.id], expected / "scenarios" / f"{skeleton.id}.jsonl", index=True)
    written = stream_import(envs, scenarios, tmp_path / "streamed")
    assert [e.id for e in written.envs] == [s.id for s in reference.skeletons]
    assert written.counts == {k: len(v) for k, v in reference.scenarios.items()} and len(written.counts) == 10
    ours, theirs = _files(tmp_path / "streamed"), _files(expected)
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        if name.endswith("skeleton.json"):
            assert ours[name] == theirs[name], name
        elif name.endswith(".jsonl"):
            assert [json.loads(x) for x in ours[name].splitlines()] == [json.loads(x) for x in theirs[name].splitlines()]
        else:  # the indexes differ only in the files' modification times
            assert json.loads(ours[name])["scenarios"] == json.loads(theirs[name])["scenarios"], name


def test_the_spool_gives_back_each_skeleton_after_others_pushed_it_out(tmp_path: Path) -> None:
    reference = import_envscaler(ES / "env_metadata.json", ES / "scenario_metadata.json")
    skeletons = [s.model_copy(update={"id": f"{s.id}_{i}"}) for i in range(5) for s in reference.skeletons]
    with EnvSpool(kept=2) as spool:
        for i, skeleton in enumerate(skeletons):
            spool[f"e{i}"] = skeleton
        order = list(range(len(skeletons)))
        random.Random(1).shuffle(order)
        for i in order + order:
            assert spool[f"e{i}"] == skeletons[i]
        assert list(spool) == [f"e{i}" for i in range(len(skeletons))] and len(spool) == len(skeletons)
        with pytest.raises(KeyError):
            spool["nope"]


def _padded_set(folder: Path, copies: int) -> tuple[Path, Path]:
    """`copies` of the fixture's first environment, each class padded with PAD bytes of its own comment, and one
    small scenario each."""
    env = next(iter(json.loads((ES / "env_metadata.json").read_text(encoding="utf-8")).values()))
    scenario = next(s for s in json.loads((ES / "scenario_metadata.json").read_text(encoding="utf-8"))
                    if s["env_id"] == env["env_id"])
    envs, items = {}, []
    for i in range(copies):
        code = env["env_class_code"] + f"\n# copy {i} " + "x" * PAD + "\n"
        envs[f"copy_{i}"] = {**env, "env_id": f"copy_{i}", "env_class_code": code}
        items.append({**scenario, "env_id": f"copy_{i}", "task_id": f"copy_{i}-0"})
    (folder / "e.json").write_text(json.dumps(envs), encoding="utf-8")
    (folder / "s.json").write_text(json.dumps(items), encoding="utf-8")
    return folder / "e.json", folder / "s.json"


def _peak(envs: Path, scenarios: Path, out: Path) -> int:
    tracemalloc.start()
    try:
        written = stream_import(envs, scenarios, out)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(written.envs) == sum(written.counts.values()) == len(json.loads(envs.read_text()))
    return peak


def test_memory_does_not_grow_with_the_number_of_environments(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # both beyond the 16 sources the parse caches keep (schema.py), which bound what an import holds
    few = _peak(*_padded_set(tmp_path / "a", 20), tmp_path / "a" / "out")
    many = _peak(*_padded_set(tmp_path / "b", 50), tmp_path / "b" / "out")
    # holding the 30 more skeletons (or the env file) would add 30 x 200 kB of class source at least
    assert many - few < 5 * PAD, f"{few / 1e6:.1f} MB for 20 environments, {many / 1e6:.1f} MB for 50"


def test_a_bad_env_file_half_way_writes_nothing(tmp_path: Path) -> None:
    envs, scenarios = _padded_set(tmp_path, 3)
    text = envs.read_text(encoding="utf-8")
    envs.write_text(text[: len(text) * 2 // 3], encoding="utf-8")  # cut short in the third (ijson reads ahead)
    with pytest.raises(InputFileError, match=r"not valid JSON after env 'copy_[01]'"):
        stream_import(envs, scenarios, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_list_after_an_import_reads_no_skeleton_until_one_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from envscaler_mcp.catalog import listing

    envs, scenarios = _padded_set(tmp_path, 3)
    stream_import(envs, scenarios, tmp_path / "home")
    read: list[str] = []
    real = listing.get_skeleton
    monkeypatch.setattr(listing, "get_skeleton", lambda env_id, root: read.append(env_id) or real(env_id, root))
    _list(tmp_path / "home")
    first = capsys.readouterr().out
    assert read == [] and all(f"copy_{i}" in first for i in range(3))
    skeleton = tmp_path / "home" / "environments" / "copy_1" / "skeleton.json"
    data = json.loads(skeleton.read_text(encoding="utf-8"))
    data["name"] = "Renamed by hand"
    skeleton.write_text(json.dumps(data), encoding="utf-8")
    _list(tmp_path / "home")
    assert read == ["copy_1"] and "Renamed by hand" in capsys.readouterr().out
    _list(tmp_path / "home")  # the changed row is kept again
    assert read == ["copy_1"]
    lines = tmp_path / "home" / "scenarios" / "copy_2.jsonl"
    assert dict(listing.env_rows(tmp_path / "home" / "environments", lines.parent))["copy_2"][5] == "1"
    lines.write_text(lines.read_text(encoding="utf-8") * 3, encoding="utf-8")  # the count follows the file
    assert dict(listing.env_rows(tmp_path / "home" / "environments", lines.parent))["copy_2"][5] == "3"


def _list(home: Path) -> None:
    from envscaler_mcp.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["list", "--home", str(home)])
    assert exit_.value.code == 0


def test_a_corrupt_or_foreign_list_cache_never_changes_what_list_shows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The cache is a hint: garbage in it, or a row planted for a skeleton whose stamp no longer matches, gives
    the skeleton's own row (the file is read again)."""
    from envscaler_mcp.catalog import listing

    envs, scenarios = _padded_set(tmp_path, 2)
    stream_import(envs, scenarios, tmp_path / "home")
    env_root = tmp_path / "home" / "environments"
    cache = listing._cache_file(env_root)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("{not json", encoding="utf-8")
    _list(tmp_path / "home")
    assert "copy_0" in capsys.readouterr().out
    planted = json.loads(cache.read_text(encoding="utf-8"))
    planted["copy_0"]["row"] = ["Planted row"] * len(planted["copy_0"]["row"])
    planted["copy_0"]["stamp"] = [0, 0]
    cache.write_text(json.dumps(planted), encoding="utf-8")
    _list(tmp_path / "home")
    out = capsys.readouterr().out
    assert "Planted row" not in out and "copy_0" in out
