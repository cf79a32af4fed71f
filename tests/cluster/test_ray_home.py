"""eval --ray with --home: the workers run the environments of the driver's data home, not the bundled ones.

The home holds a copy of a bundled environment under an id the bundled catalog does not have, so a worker
that looked the id up anywhere else could not run it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.catalog.paths import package_root, set_home
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from tests.cluster.conftest import local_ray

SOURCE, COPY = "ecommerce_orders", "shop_only_in_the_home"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("ENVSCALER_MCP_HOME", raising=False)
    root, out = package_root(), tmp_path / "home"
    skeleton = json.loads((root / "environments" / SOURCE / "skeleton.json").read_text())
    skeleton["id"] = COPY
    (out / "environments" / COPY).mkdir(parents=True)
    (out / "environments" / COPY / "skeleton.json").write_text(json.dumps(skeleton))
    (out / "scenarios").mkdir()
    lines = [json.loads(line) for line in (root / "scenarios" / f"{SOURCE}.jsonl").read_text().splitlines() if line]
    (out / "scenarios" / f"{COPY}.jsonl").write_text("".join(json.dumps({**s, "env_id": COPY}) + "\n" for s in lines))
    set_home(out)
    try:
        yield out
    finally:
        set_home(None)
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[None]:
    with local_ray(num_cpus=1):
        yield


def test_workers_run_the_environments_of_the_data_home(home: Path, cluster: None, tmp_path: Path) -> None:
    config = RunConfig.model_validate({"envs": [COPY], "agent": "oracle", "transport": "memory", "progress": False,
                                       "limit": 2, "ray": "auto", "ray_workers": 1})
    out = tmp_path / "run"
    anyio.run(run_eval, config, out)
    records = RunDir(out).read_results()
    assert [(r.env_id, r.status, r.score) for r in records] == [(COPY, "completed", 1.0)] * 2
