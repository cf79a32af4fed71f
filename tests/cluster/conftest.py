"""A private Ray on loopback for the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.security.conftest import open_dir  # noqa: F401 (a fixture of these tests too)


@contextmanager
def local_ray(num_cpus: int) -> Iterator[None]:
    """Ray on 127.0.0.1 with `num_cpus` CPUs, shut down on exit."""
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")
    ray.init(num_cpus=num_cpus, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()
