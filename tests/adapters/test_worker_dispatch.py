"""How local workers share a run (adapters/worker_procs.py, adapters/local_run.py): by environment, so that each
environment's server starts in as few workers as possible; `--concurrency` shared out as a total; `auto` one worker
per CPU only for runs that repay a worker's start-up."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

import pytest

from envscaler_mcp.adapters import local_run
from envscaler_mcp.adapters.local_run import MAX_LINE_BYTES, MIN_ITEMS_PER_WORKER, WORKER_MB, auto_workers
from envscaler_mcp.adapters.worker_procs import WorkerPool, WorkItem, _Worker, split_concurrency
from envscaler_mcp.errors import UsageError


def pool_with(queue: dict[str, int], workers: int) -> tuple[WorkerPool, list[_Worker]]:
    pool = WorkerPool(init={}, capacity=[1] * workers, on_result=lambda _i, _r: None)
    numbers = iter(range(1000))  # item numbers are unique in a run
    pool._queue = OrderedDict((key, deque((next(numbers), WorkItem(key, {})) for _ in range(count)))
                              for key, count in queue.items())
    pool.workers = [_Worker(proc=None, stdout=None, capacity=2) for _ in range(workers)]  # type: ignore[arg-type]
    return pool, pool.workers


def take(pool: WorkerPool, worker: _Worker) -> str | None:
    taken = pool._take(worker)
    return taken[1].key if taken is not None else None


def test_a_worker_keeps_to_its_environment_and_others_take_the_next() -> None:
    pool, (a, b) = pool_with({"e1": 3, "e2": 3, "e3": 1}, 2)
    assert [take(pool, a), take(pool, a)] == ["e1", "e1"]
    assert [take(pool, b), take(pool, b)] == ["e2", "e2"]
    assert take(pool, a) == "e1"  # its own first, not the unclaimed e3
    assert take(pool, a) == "e3"  # e1 is done: the next environment nobody has
    assert take(pool, b) == "e2"
    assert take(pool, b) is None and take(pool, a) is None


def test_an_environment_is_split_only_when_none_is_left_unclaimed() -> None:
    pool, (a, b) = pool_with({"e1": 6}, 2)
    assert take(pool, a) == "e1"
    assert take(pool, b) == "e1"  # fewer environments than workers with work: a share of the busiest
    pool, (a, b) = pool_with({"e1": 4, "e2": 1, "e3": 5}, 2)
    assert take(pool, a) == "e1" and take(pool, b) == "e2"
    assert take(pool, b) == "e3"  # e2 done, e3 unclaimed: b takes it rather than a share of e1
    assert take(pool, a) == "e1"


@pytest.mark.parametrize(("total", "workers", "shares"), [(4, 2, [2, 2]), (5, 2, [3, 2]), (1, 2, [1]), (8, 3, [3, 3, 2])])
def test_concurrency_is_the_total_shared_by_the_workers(total: int, workers: int, shares: list[int]) -> None:
    assert split_concurrency(total, workers) == shares


def test_auto_runs_a_worker_per_three_cpus_only_where_it_repays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_run, "cpu_count", lambda: 2)
    monkeypatch.setattr(local_run, "available_mb", lambda: 8 * WORKER_MB)
    big = 2 * MIN_ITEMS_PER_WORKER
    assert auto_workers(100 * big, 1_000, 4) == 1  # one process already keeps 2 CPUs busy
    monkeypatch.setattr(local_run, "cpu_count", lambda: 6)
    assert auto_workers(big, 1_000, 4) == 2
    assert auto_workers(big - 1, 1_000, 4) == 1  # too small to repay a second worker's start-up
    assert auto_workers(10 * big, MAX_LINE_BYTES + 1, 4) == 1  # large states: a second copy of them would not fit
    assert auto_workers(10 * big, 1_000, 4, cpu_seat=False) == 1  # a model behind an API: the CPU is not the limit
    assert auto_workers(10 * big, 1_000, 1) == 1  # one episode at a time
    monkeypatch.setattr(local_run, "cpu_count", lambda: 24)
    assert auto_workers(100 * big, 1_000, 8) == 8  # one per 3 CPUs
    assert auto_workers(100 * big, 1_000, 4) == 4  # never more workers than episodes at a time
    monkeypatch.setattr(local_run, "available_mb", lambda: 3 * WORKER_MB - 1)
    assert auto_workers(100 * big, 1_000, 8) == 2  # nor more than the memory available holds


def test_a_bad_workers_value_is_one_usage_error() -> None:
    with pytest.raises(UsageError, match="--workers: 'none' is neither"):
        local_run.parse_workers("none")
    assert local_run.parse_workers("AUTO") is None and local_run.parse_workers("3") == 3


def test_workers_refuse_what_would_not_run_in_them() -> None:
    from envscaler_mcp.harness.config import RunConfig

    local = RunConfig(envs=["library_loans"], agent="local/qwen2.5-1.5b-instruct")
    with pytest.raises(UsageError, match="its own local model server"):
        local_run.eval_workers("2", local, [])
    assert local_run.eval_workers("auto", local, []) == 1
    external = RunConfig(envs=["x"], agent="oracle", server_cmd="some-server")
    with pytest.raises(UsageError, match="--server/--url run in one process"):
        local_run.eval_workers("2", external, [])
    assert local_run.eval_workers("3", RunConfig(envs=["x"], agent="oracle", concurrency=2), []) == 2


@pytest.mark.anyio
async def test_the_next_environment_is_prepared_when_the_last_item_of_one_goes_out() -> None:
    pool, (a, b) = pool_with({"e1": 2, "e2": 3, "e3": 1}, 2)
    sent: list[tuple[int, str, str]] = []

    async def send(worker: _Worker, message: dict[str, Any]) -> None:
        sent.append((pool.workers.index(worker), message["op"], message.get("key", "")))

    pool._send = send  # type: ignore[method-assign]
    await pool._fill(a)  # both of e1's items: then e2, which nobody has, is prepared on the same worker
    assert sent == [(0, "run", "e1"), (0, "run", "e1"), (0, "prepare", "e2")]
    sent.clear()
    await pool._fill(b)  # e2 is a's now: b takes e3, nobody's (no environment is left to prepare), then, none
    assert sent == [(1, "run", "e3"), (1, "run", "e2")]  # unclaimed being left, a share of the busiest
    sent.clear()
    a.in_flight.clear()
    await pool._release_idle(a)  # e1 is done and held nowhere: its server stops; e2 still has items queued
    assert sent == [(0, "release", "e1")]
