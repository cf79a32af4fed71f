"""Episodes opened, read and closed one after another on one server with a process per episode.

    python benchmarks/episode_cycle_bench.py SERVER_DIR [--episodes 300]
    python benchmarks/tree_cpu_split.py -- python benchmarks/episode_cycle_bench.py SERVER_DIR   # whole-tree CPU

Launches the server over the pipe with `episode_process="fork"`, opens one episode (not counted: the zygote's
first fork), then N times: open an episode at the server's default state, read its final state, close it.
Prints episodes/s and the median time of each step. Compare two runtimes by running each one's rendered
server (e.g. main's `git archive` on PYTHONPATH with its own generated_servers/) alternately.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from envscaler_mcp.launch import launch_server


async def cycle(server_dir: Path, episodes: int) -> None:
    steps: dict[str, list[float]] = {"open": [], "final state": [], "close": []}
    async with launch_server(server_dir, transport="pipe", episode_process="fork") as server:
        async with server.episode(None) as first:
            await first.final_state()
        started = time.monotonic()
        for _ in range(episodes):
            t0 = time.monotonic()
            opened = server.episode(None)
            episode = await opened.__aenter__()
            t1 = time.monotonic()
            await episode.final_state()
            t2 = time.monotonic()
            await opened.__aexit__(None, None, None)
            t3 = time.monotonic()
            for name, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2), strict=True):
                steps[name].append(seconds)
        wall = time.monotonic() - started
    medians = ", ".join(f"{name} {statistics.median(values) * 1000:.1f} ms" for name, values in steps.items())
    print(f"{episodes} episodes in {wall:.2f} s: {episodes / wall:.1f} episodes/s (medians: {medians})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("server_dir", type=Path)
    parser.add_argument("--episodes", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(cycle(args.server_dir, args.episodes))


if __name__ == "__main__":
    main()
