"""`eval --workers N` and `scenarios check --workers N`: a run's episodes, or the gate's scenarios, spread over N
local worker processes (adapters/worker_procs.py), each with its own servers and validator sandbox.

Only this process writes: each finished episode comes back as its record and is appended to results.jsonl by the
harness's driver code (harness/run.py, the same as for Ray: resume, progress, summary, the isolation each worker
ran under, 'worker:<pid>/validators' and 'worker:<pid>/server:<env>'); each judged scenario's report line is
appended to the gate's results file. `--concurrency` is the total: it is shared by the workers.

`auto` (the default) picks one worker per CPUS_PER_WORKER CPUs when the work repays their start-up (a worker
costs about 1 s of CPU to start and adds about 200 MB to the process tree: `auto_workers`), else one (the run
stays in this process). On 2 CPUs that is one: a second worker made eval slower there (benchmarks/README.md).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import anyio

from envscaler_mcp import _choices
from envscaler_mcp._io import append_jsonl
from envscaler_mcp.adapters.worker_procs import (
    WorkerPool,
    WorkItem,
    cpu_count,
    split_concurrency,
    worker_home,
)
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.run import Finished
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.qa.batch import GateSettings, Item, StoredScenario
from envscaler_mcp.qa.results import ResultsFile

# A run repays a second worker when it has at least this many items per CPU (a worker's start-up, about 1 s of
# CPU, is a few dozen episodes' worth: benchmarks/README.md "Local workers").
MIN_ITEMS_PER_WORKER = 25
# Scenario lines above this size keep a run in one process: a worker holds its own copies of the states in flight
# (a 1.3 MB line costs the process tree tens of megabytes while it runs), and the 300 MB bound of a large set
# would not hold with two.
MAX_LINE_BYTES = 256 << 10
# What a worker adds to the process tree's peak PSS (its interpreter, validator and server zygotes, its servers):
# about 175-225 MB on the N = 10 catalog (benchmarks/README.md "Local workers"); auto starts no more workers than
# the memory available now holds at this much each.
WORKER_MB = 250
# The CPUs one harness process keeps busy: on the N = 100 catalog the command's process is about a third of the
# machine's CPU per oracle episode (64 ms, nearly half of it the kernel's: the servers' and validators' forks), so
# one process already loads 2 CPUs (1.76 busy; two workers: 1.89 busy and 14 % more CPU per episode, slower).
CPUS_PER_WORKER = 3


def auto_workers(items: int, largest_line: int, concurrency: int, *, cpu_seat: bool = True) -> int:
    """How many worker processes `--workers auto` runs `items` on: one per CPUS_PER_WORKER CPUs (at most `concurrency`, and as many
    as the available memory holds at WORKER_MB each) when each gets at least MIN_ITEMS_PER_WORKER items, no line is
    over MAX_LINE_BYTES and the work is this machine's CPU."""
    if not cpu_seat or largest_line > MAX_LINE_BYTES:
        return 1
    return max(1, min(_most_workers(concurrency), items // MIN_ITEMS_PER_WORKER))


def _most_workers(concurrency: int) -> int:
    """One worker per CPUS_PER_WORKER CPUs, at most `concurrency` and as many as the available memory holds."""
    return max(1, min(-(-cpu_count() // CPUS_PER_WORKER), concurrency, available_mb() // WORKER_MB))


def available_mb() -> int:
    """Megabytes of memory available now (/proc/meminfo MemAvailable; a large number where it cannot be read)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 20


def parse_workers(value: str) -> int | None:
    """`--workers N|auto`: N, or None for auto (a UsageError otherwise)."""
    try:
        return _choices.parse_workers(value)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def eval_workers(value: str, config: RunConfig, plans: list[EnvPlan]) -> int:
    """The worker processes of an eval: `--workers` (N or auto) for this run's plans."""
    asked = parse_workers(value)
    external = bool(config.server_cmd or config.url)
    if asked is not None:
        if asked > 1 and external:
            raise UsageError("--workers runs bundled or generated environments; --server/--url run in one process")
        if asked > 1 and any(seat.strip().startswith("local/") for seat in (config.agent, config.user or "")):
            raise UsageError("--workers: each worker would start its own local model server; run the local model "
                             "in one process (--workers 1)")
        return min(asked, config.concurrency)
    if external or config.ray:
        return 1
    items = sum(p.count() for p in plans) * config.trials
    largest = max((line.length for p in plans for line in p.lines.values()), default=0)
    return auto_workers(items, largest, config.concurrency, cpu_seat=_choices.cpu_seat(config.agent, config.user))


def _exact(config: RunConfig) -> dict[str, Any]:
    """The configuration as the workers need it: URLs whole (run.json leaves their credentials out)."""
    data = config.model_dump(mode="json")
    data.update(agent_base_url=config.agent_base_url, url=config.url)
    return data


@dataclasses.dataclass
class LocalEpisodes:
    """A run's episodes on local worker processes (harness/run.py RemoteEpisodes)."""

    workers: int
    pool: WorkerPool | None = None  # the last run's (the tests read its pids)

    def connect(self, config: RunConfig) -> None:
        if config.server_cmd or config.url:
            raise UsageError("--workers runs bundled or generated environments; --server/--url run in one process")

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Callable[[str], None]) -> None:
        by_env = {p.env_id: p for p in plans}
        trials_left = Counter((env, sid) for env, sid, _ in todo)
        items = []
        for env, sid, trial in todo:
            trials_left[env, sid] -= 1
            items.append(WorkItem(env, {"scenario_id": sid, "trial": trial, "last": not trials_left[env, sid]}))
        capacity = split_concurrency(config.concurrency, self.workers)

        writing = anyio.Lock()

        async def on_result(_item: WorkItem, record: dict[str, Any]) -> None:
            result = EpisodeResult.model_validate_json(record["result"])
            isolation = {k: IsolationReport.model_validate(v) for k, v in record["isolation"].items()}
            # one at a time, in a thread (as Ray's driver does): the fsync of each record does not hold up the
            # event loop that hands out the next episodes
            async with writing:
                await anyio.to_thread.run_sync(finished, result, isolation)

        self.pool = WorkerPool(
            init={"job": "eval", "config": _exact(config), "run_id": run_id, "home": worker_home(),
                  # the validator processes of a one-process run (one per CPU, at most one per episode at a time),
                  # shared by the workers: more would only cost their start-up
                  "validator_workers": max(1, min(max(capacity), cpu_count() // len(capacity)))},
            capacity=capacity, on_result=on_result, on_lost=warn,
            setup=lambda key: by_env[key].model_dump(mode="json"),
        )
        await self.pool.run(items)


def _payload(item: Item) -> dict[str, Any]:
    if isinstance(item, StoredScenario):
        return {"path": str(item.path), "header": item.header.model_dump(mode="json"),
                "line": dataclasses.asdict(item.line)}
    return {"scenario": item.model_dump(mode="json")}


@dataclasses.dataclass
class LocalGate:
    """The gate's scenarios on local worker processes (qa/cli.py RemoteGate)."""

    workers: int
    pool: WorkerPool | None = None

    def connect(self) -> None:
        """Nothing to join: the workers start with the run."""

    def run(self, items: list[tuple[Any, Item]], results: ResultsFile, settings: GateSettings) -> None:
        """Judge every item on the workers, `settings.concurrency` at a time in all, each report line appended to
        `results` as it comes back."""
        from envscaler_mcp import _interrupt

        if any(not isinstance(target, str) for target, _ in items):
            raise UsageError("--workers gates environments named by id or path")
        capacity = split_concurrency(settings.concurrency, self.workers)
        # the validator processes asked for, shared by the workers (more would only cost their start-up)
        worker_settings = dataclasses.replace(settings, workers=max(1, min(settings.workers // len(capacity),
                                                                           max(capacity))))
        self.pool = WorkerPool(
            init={"job": "gate", "settings": dataclasses.asdict(worker_settings), "home": worker_home()},
            capacity=capacity, on_result=lambda _item, line: append_jsonl(results.path, line),
            setup=lambda key: {"target": key},
            on_lost=lambda message: print(f"warning: {message}", file=sys.stderr),
        )
        work = [WorkItem(str(target), _payload(item)) for target, item in items]
        pool = self.pool
        _interrupt.run(lambda: pool.run(work))


def most_gate_workers(value: str, settings: GateSettings) -> int:
    """The most worker processes `--workers` may give a gate on this machine, before its scenarios are listed."""
    asked = parse_workers(value)
    if asked is not None:
        return min(asked, settings.concurrency)
    return _most_workers(settings.concurrency)


def gate_workers(value: str, items: list[tuple[Any, Item]], settings: GateSettings) -> int:
    """The worker processes of a gate: `--workers` (N or auto) for these scenarios."""
    asked = parse_workers(value)
    if asked is not None:
        return min(asked, settings.concurrency)
    largest = max((item.line.length for _, item in items if isinstance(item, StoredScenario)), default=0)
    return auto_workers(len(items), largest, settings.concurrency)
