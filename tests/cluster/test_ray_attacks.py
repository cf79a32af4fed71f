"""eval --ray: an error raised on a worker reaches the command line as one line, as in a local run; the
workers resolve environment ids in the driver's data home (--home).

The workers of a cluster get their environment from `ray start`, not from the driver: a provider key set
only where the driver runs is missing on the workers (the driver's own check passes, the workers' fails).
A bug on a worker stops the run like a bug in a local run: one line, the traceback in error.log. The home
holds a copy of a bundled environment under an id the bundled catalog does not have, so a worker that
looked the id up anywhere else could not run it.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from envscaler_mcp.adapters.ray_run import RayEpisodes
from envscaler_mcp.catalog.paths import package_root, set_home
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from tests.cluster.conftest import local_ray

KEY = "OPENAI_API_KEY"
SOURCE, COPY = "ecommerce_orders", "shop_only_in_the_home"


@pytest.fixture(scope="module")
def keyless_workers() -> Iterator[None]:
    saved = os.environ.pop(KEY, None)
    try:
        with local_ray(num_cpus=1):
            os.environ[KEY] = "sk-only-on-the-driver"  # after the workers' environment is fixed
            yield
    finally:
        os.environ.pop(KEY, None)
        if saved is not None:
            os.environ[KEY] = saved


def eval_on_ray(out: Path, agent: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from envscaler_mcp.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(["eval", "--env", "ecommerce_orders", "--agent", agent, "--limit", "1", "--ray", "auto",
              "--ray-workers", "1", "--no-progress", "--out", str(out)])
    code = stopped.value.code
    return code if isinstance(code, int) else 1, capsys.readouterr().err.strip()


def test_a_missing_key_on_the_workers_is_one_line(keyless_workers: None, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, err = eval_on_ray(tmp_path / "run", "openai/gpt-4.1", capsys)
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    assert KEY in err and "Ray worker" in err, err
    assert "Traceback" not in err and 'File "' not in err, err


def test_a_bug_on_a_worker_is_one_line_and_error_log(keyless_workers: None, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.adapters import ray_run

    class BuggyWorker(ray_run.EpisodeWorker):  # defined here, so Ray ships it to the worker by value
        async def run(self, env_id: str, scenario_id: str, trial: int) -> dict[str, Any]:
            raise KeyError("a bug on the worker")

    monkeypatch.setattr(ray_run, "EpisodeWorker", BuggyWorker)
    out = tmp_path / "run"
    code, err = eval_on_ray(out, "oracle", capsys)
    assert code != 0, err
    assert len(err.splitlines()) == 1 and "internal error" in err, err
    assert "a bug on the worker" in (out / "error.log").read_text()


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


def test_workers_run_the_environments_of_the_data_home(home: Path, keyless_workers: None,
                                                     tmp_path: Path) -> None:
    config = RunConfig.model_validate({"envs": [COPY], "agent": "oracle", "transport": "memory", "progress": False,
                                       "limit": 2, "ray": "auto", "ray_workers": 1})
    out = tmp_path / "run"
    anyio.run(partial(run_eval, remote=RayEpisodes()), config, out)
    records = RunDir(out).read_results()
    assert [(r.env_id, r.status, r.score) for r in records] == [(COPY, "completed", 1.0)] * 2


def test_hostile_environment_code_on_a_worker_is_confined(keyless_workers: None, tmp_path: Path, open_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A data home whose environment code writes files, connects to a listener, runs programs and forks, at
    import and in its tools; the worker renders it and runs it under the same OS layers as a local run."""
    from tests.security.conftest import Listener
    from tests.security.test_server_attacks import FIXTURE, attack_code

    monkeypatch.delenv("ENVSCALER_MCP_HOME", raising=False)
    listener = Listener()
    (open_dir / "secret.txt").write_text("s3cr3t-file")
    home = tmp_path / "home"
    (home / "environments" / "mini_shop").mkdir(parents=True)
    skeleton = json.loads((FIXTURE / "skeleton.json").read_text())
    skeleton["class_source"] += attack_code(open_dir, listener.port)
    (home / "environments" / "mini_shop" / "skeleton.json").write_text(json.dumps(skeleton))
    (home / "scenarios").mkdir()
    shutil.copy(FIXTURE / "scenarios.jsonl", home / "scenarios" / "mini_shop.jsonl")
    set_home(home)
    try:
        config = RunConfig.model_validate({"envs": ["mini_shop"], "agent": "oracle", "progress": False,
                                           "ray": "auto", "ray_workers": 1})
        anyio.run(partial(run_eval, remote=RayEpisodes()), config, tmp_path / "run")
    finally:
        set_home(None)
        time.sleep(0.3)
        listener.close()
    results = (tmp_path / "run" / "results.jsonl").read_text()
    assert "at_import" in results, "the hostile server did not run"  # list_orders reported its attacks
    assert not (open_dir / "written.txt").exists() and not (open_dir / "executed.txt").exists()
    assert listener.connections == 0 and listener.received == []
    assert "s3cr3t" not in results
