"""A private Ray on loopback for the cluster tests: one cluster (2 CPUs) shared by the tests that take the
`cluster` fixture, and `local_ray` for a module that needs its own (e.g. workers started without a key)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.security.conftest import open_dir  # noqa: F401 (a fixture of these tests too)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OWN_CLUSTER = ("test_ray_attacks.py",)  # modules that start a cluster of their own (local_ray)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Ray starts a cluster and its workers: on a loaded machine (load 5 on 2 cores) a test here took over the
    suite's 120 s. Their own limit is 600 s, still short of a hang. The tests of the shared cluster run before
    those of a module's own cluster (OWN_CLUSTER), so that the shared one starts once."""
    places = [i for i, item in enumerate(items) if HERE in Path(str(item.fspath)).resolve().parents]
    ours = sorted((items[i] for i in places), key=lambda item: item.path.name in OWN_CLUSTER)
    for i, item in zip(places, ours, strict=True):
        item.add_marker(pytest.mark.timeout(600))
        items[i] = item


def _start(num_cpus: int) -> None:
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")
    if ray.is_initialized():  # another module's cluster: each cluster is set up for its own tests
        ray.shutdown()
    # the workers import test fixtures (scripted providers) by module name: they need the checkout's root
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=num_cpus, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             configure_logging=False, runtime_env={"env_vars": {"PYTHONPATH": path}})


def actor_pids(actor: str) -> list[int]:
    """The processes of a run's Ray actors of class `actor` (Ray titles them ray::<class>...)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(f"ray::{actor}".encode()):
                pids.append(int(entry.name))
    return pids


@contextmanager
def killing_one(actor: str, results: Path, timeout_s: float = 300) -> Iterator[list[tuple[int, int]]]:
    """While the block runs, SIGKILL one `actor` process once `results` has its first line; yields the
    [(pid, lines in results then)] of the kill (empty when none happened)."""
    killed: list[tuple[int, int]] = []

    def kill() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            lines = results.read_text().count("\n") if results.exists() else 0
            pids = actor_pids(actor)
            if lines >= 1 and pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append((pids[0], lines))
                return
            time.sleep(0.01)

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        yield killed
    finally:
        killer.join()


@contextmanager
def local_ray(num_cpus: int) -> Iterator[None]:
    """A cluster of its own on 127.0.0.1 with `num_cpus` CPUs, shut down on exit."""
    _start(num_cpus)
    try:
        yield
    finally:
        import ray

        ray.shutdown()


@pytest.fixture
def cluster() -> Iterator[None]:
    """The shared cluster: started by the first test that needs it (again after a module's own cluster)."""
    ray = pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")
    if not ray.is_initialized():
        _start(2)
    yield


@pytest.fixture
def cluster_address(cluster: None) -> str:
    """The shared cluster's address, for a command run in a process of its own (which joins it, as `--ray
    ADDR` does, and leaves it at its end)."""
    import ray

    return str(ray.get_runtime_context().gcs_address)


@pytest.fixture(scope="package", autouse=True)
def _ray_down_at_the_end() -> Iterator[None]:
    """The last cluster stops with the last test here: its processes take no CPU from the rest of the suite."""
    yield
    try:
        import ray
    except ImportError:
        return
    if ray.is_initialized():
        ray.shutdown()
