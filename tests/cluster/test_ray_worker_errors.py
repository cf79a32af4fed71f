"""An error raised on a Ray worker reaches the command line as one line, as in a local run.

The workers of a cluster get their environment from `ray start`, not from the driver: a provider key set
only where the driver runs is missing on the workers (the driver's own check passes, the workers' fails).
A bug on a worker stops the run like a bug in a local run: one line, the traceback in error.log.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import local_ray

KEY = "OPENAI_API_KEY"


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
    from envscaler_mcp.harness import ray_run

    class BuggyWorker(ray_run.EpisodeWorker):  # defined here, so Ray ships it to the worker by value
        async def run(self, env_id: str, scenario_id: str, trial: int) -> dict[str, Any]:
            raise KeyError("a bug on the worker")

    monkeypatch.setattr(ray_run, "EpisodeWorker", BuggyWorker)
    out = tmp_path / "run"
    code, err = eval_on_ray(out, "oracle", capsys)
    assert code != 0, err
    assert len(err.splitlines()) == 1 and "internal error" in err, err
    assert "a bug on the worker" in (out / "error.log").read_text()
