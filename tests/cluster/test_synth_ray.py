"""synth envs / synth scenarios on a local Ray cluster (loopback, 2 CPUs) with the scripted mock providers:
the same output as a local run, every item written once by the driver, and resume redoes only what is missing."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest

from envscaler_mcp._io import iter_jsonl, read_json
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.launch import LaunchedServer, launch_server
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.scen.pipeline import Providers, ScenOptions, run_scenarios
from envscaler_mcp.synth.skel.checkstage import CheckOptions
from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig, run_skel
from tests.synth.fixtures.scen_router import ScenRouter
from tests.synth.fixtures.skel_router import SkelRouter

pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "synth" / "fixtures" / "skel_corpus.jsonl"
KEPT = {"library_loan_management_system", "clinic_appointment_scheduling_system"}


def mock_seats() -> Seats:
    """Built on each Ray worker: the scripted SkelBuilder answers."""
    provider = MockProvider([SkelRouter()], repeat_last=True, spec="mock/skel-router")
    return Seats(generator=provider, tester=provider, checker=provider)


def mock_scen_providers() -> Providers:
    return MockProvider([ScenRouter("scen_todo", "good")], repeat_last=True, spec="mock/scen"), None


def memory_server(skeleton: EnvSkeleton) -> AbstractAsyncContextManager[LaunchedServer]:
    return launch_server(skeleton, "memory")


def ids(path: Path, key: str) -> list[str]:
    return sorted(str(r[key]) for _, r in iter_jsonl(path)) if path.exists() else []


def test_synth_envs_model_and_check_on_ray(cluster: None, tmp_path: Path) -> None:
    out = tmp_path / "out"
    events: list[tuple[str, str, str]] = []
    config = SkelConfig(out=out, tasks=CORPUS, ray="auto", ray_workers=2, make_seats=mock_seats,
                        check=CheckOptions(min_tools=4))  # the corpus's environments have 4 tools
    config.model.on_item = config.check.on_item = lambda *event: events.append(event)
    anyio.run(run_skel, config, mock_seats())
    # what the local run of the same corpus gives (tests/synth/skel/test_pipeline.py)
    assert {p.stem for p in (out / "model" / "envs").glob("*.json")} == KEPT
    assert ids(out / "model" / "dropped.jsonl", "env_id") == ["city_parking_permit_office"]
    checked = {p.stem: read_json(p) for p in (out / "check" / "envs").glob("*.json")}
    assert set(checked) == KEPT and all(r["kept"] and r["final_report"]["failed"] == 0 for r in checked.values())
    assert checked["clinic_appointment_scheduling_system"]["final_report"]["repaired_tools"] == ["cancel_appointment"]
    assert {p.parent.name for p in (out / "environments").glob("*/skeleton.json")} == KEPT
    assert sorted(e[:2] for e in events if e[0] == "check") == sorted(("check", env) for env in KEPT)
    assert len([e for e in events if e[0] == "model"]) == 3  # each topic once: two written, one dropped

    # a lost result: resume runs only that item again, on Ray
    (out / "check" / "envs" / "library_loan_management_system.json").unlink()
    events.clear()
    config = SkelConfig(out=out, stage="check", resume=True, ray="auto", ray_workers=1, make_seats=mock_seats,
                        check=CheckOptions(min_tools=4))
    config.check.on_item = lambda *event: events.append(event)
    anyio.run(run_skel, config, mock_seats())
    assert [e[1] for e in events] == ["library_loan_management_system"]
    assert read_json(out / "check" / "envs" / "library_loan_management_system.json")["kept"] is True


def test_synth_scenarios_on_ray_match_the_local_run(cluster: None, tmp_path: Path) -> None:
    skeleton = build_skeleton_from_dir(ROOT / "tests" / "synth" / "fixtures" / "scen_todo")

    async def local() -> None:
        generator, _ = mock_scen_providers()
        await run_scenarios([skeleton], generator, None, ScenOptions(n=3, out=tmp_path / "local"), memory_server)

    async def on_ray(n: int = 3, **options: Any) -> None:
        generator, _ = mock_scen_providers()
        await run_scenarios([skeleton], generator, None,
                            ScenOptions(**{"n": n, "out": tmp_path / "ray", "ray": "auto", "ray_workers": 2, **options}),
                            memory_server, make_providers=mock_scen_providers)

    anyio.run(local)
    anyio.run(on_ray)
    work = Path("_work") / "scen_todo"
    sets = [[(sc.id, sc.task) for sc in load_scenarios(tmp_path / side / "scen_todo.jsonl")] for side in ("local", "ray")]
    assert sets[0] == sets[1] and sets[0]
    assert ids(tmp_path / "ray" / work / "dropped.jsonl", "item_id") == \
        ids(tmp_path / "local" / work / "dropped.jsonl", "item_id")
    items = sorted(p.name for p in (tmp_path / "ray" / work / "items").glob("*.json"))
    assert items == sorted(p.name for p in (tmp_path / "local" / work / "items").glob("*.json"))
    dropped = ids(tmp_path / "ray" / work / "dropped.jsonl", "item_id")
    finished = [p.removesuffix(".json") for p in items]
    assert sorted(finished + [d for d in dropped if d not in finished]) == \
        ["s001", "s002", "s003"]  # each item finished once (kept, or dropped as a duplicate of a kept one)

    # top up on Ray: only the new item is built; the set already written stays
    before = {p.name: p.read_text() for p in (tmp_path / "ray" / work / "items").glob("*.json")}
    anyio.run(lambda: on_ray(n=4, resume=True, ray_workers=1))
    states = sorted(p.name for p in (tmp_path / "ray" / work / "states").glob("*.json"))
    assert states == ["s001.json", "s002.json", "s003.json", "s004.json"]
    assert all((tmp_path / "ray" / work / "items" / name).read_text() == text for name, text in before.items())


@pytest.mark.parametrize("command", [
    ["synth", "scenarios", str(ROOT / "tests" / "fixtures" / "mini_shop" / "skeleton.json"), "--model", "mock/x"],
    ["synth", "envs", "--tasks", str(CORPUS), "--model", "mock/x"],
])
def test_synth_without_a_cluster_says_so_in_one_line(command: list[str], tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "envscaler_mcp", *command, "--ray", "127.0.0.1:1",
                           "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""}, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in output and "--ray 127.0.0.1:1" in output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json*"))
