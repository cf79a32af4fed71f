"""One local Ray cluster on loopback (2 CPUs) for the whole cluster test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cluster() -> Iterator[None]:
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")
    # the workers import test fixtures (scripted providers) by module name: they need the checkout's root
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield
    finally:
        ray.shutdown()
