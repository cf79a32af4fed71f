"""Episodes/s of the oracle: a local run against `eval --ray` with 1 and 2 workers, and memory per worker.

    nice -n 10 .venv/bin/python benchmarks/ray_bench.py [--envs ecommerce_orders,library_loans] [--trials 2]

The oracle replays reference solutions, so an episode costs only the harness, the server and the validators
(a model's latency comes on top, and is what more workers hide). Prints one table and an estimate for N
nodes from the measured per-episode cost.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from functools import partial
from pathlib import Path

import anyio
import ray

from envscaler_mcp.adapters.ray_run import RayEpisodes
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir


def worker_rss_mb() -> list[float]:
    """Resident memory (MB) of each live ray::EpisodeWorker process."""
    sizes = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "cmdline").read_bytes().startswith(b"ray::EpisodeWorker"):
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    sizes.append(int(line.split()[1]) / 1024)
        except OSError:
            continue
    return sizes


def timed(config: RunConfig, out: Path) -> tuple[float, int, float]:
    """(seconds, episodes, peak RSS per worker in MB) of one run."""
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max([peak[0], *worker_rss_mb()])
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    start = time.perf_counter()
    anyio.run(partial(run_eval, remote=RayEpisodes()), config, out)
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    return seconds, len(RunDir(out).read_results()), peak[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--envs", default="ecommerce_orders,library_loans")
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    base = {"envs": args.envs.split(","), "agent": "oracle", "transport": "http", "progress": False,
            "trials": args.trials, "limit": args.limit, "concurrency": args.concurrency}
    ray.init(num_cpus=2, _node_ip_address="127.0.0.1", include_dashboard=False, log_to_driver=False,
             configure_logging=False)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, extra in [("local", {}), ("ray, 1 worker", {"ray": "auto", "ray_workers": 1}),
                             ("ray, 2 workers", {"ray": "auto", "ray_workers": 2})]:
            seconds, episodes, rss = timed(RunConfig.model_validate({**base, **extra}), Path(tmp) / label)
            rows.append((label, episodes, seconds, episodes / seconds, rss))
    ray.shutdown()
    local_rate = rows[0][3]
    print(f"{'run':<16}{'episodes':>9}{'seconds':>9}{'episodes/s':>12}{'vs local':>10}{'RSS/worker MB':>15}")
    for label, episodes, seconds, rate, rss in rows:
        print(f"{label:<16}{episodes:>9}{seconds:>9.1f}{rate:>12.2f}{rate / local_rate:>9.2f}x"
              f"{(f'{rss:.0f}' if rss else '-'):>15}")
    per_episode = rows[2][2] * 2 / rows[2][1]  # worker-seconds per episode on 2 workers
    print(f"\nmeasured: {per_episode:.2f} worker-seconds per oracle episode (2 workers, startup included).")
    print(f"estimate for N nodes of C CPUs: about N*C/{per_episode:.2f} episodes/s while the driver keeps up "
          "(it only appends records); with a model, add its latency per step to the per-episode cost."
          )


if __name__ == "__main__":
    main()
