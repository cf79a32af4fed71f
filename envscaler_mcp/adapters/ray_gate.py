"""`scenarios check --ray`: the QA gate's scenarios spread over a Ray cluster, one item per scenario.

The items run on the actors of adapters/ray_items.py (ItemWorker, dispatched by ray_run.RayDispatch): each
worker keeps one validator sandbox and one server per environment it has been given scenarios of, judges a
scenario through the local gate's own code (qa.batch.judge) and appends its report line to a scratch copy of
the results file; that line comes back with the item and the driver appends it to the real results file. So
the lines, the resume rule (qa/results.py: a scenario with a line is judged) and the reports are those of a
local run; a worker lost mid-scenario loses only that scenario, which is sent again. Imported only when a
run asks for Ray; `ray` is the optional extra `.[ray]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._io import append_jsonl
from envscaler_mcp.adapters.ray_items import ItemCallback, RayCommand
from envscaler_mcp.adapters.ray_run import driver_home, driver_session
from envscaler_mcp.catalog.paths import set_home
from envscaler_mcp.errors import UsageError, ValidatorError
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.batch import GateSettings, Item, Target, failing_factory, judge, target_of
from envscaler_mcp.qa.results import ResultsFile, report_line
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.replay import EpisodeFactory
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.skeleton.models import EnvSkeleton


@dataclass
class GateJob:
    """Scenarios on a Ray worker: (server target, scenario) items, each report a line of `results_name`."""

    results_name: str
    settings: GateSettings = field(default_factory=GateSettings)  # its concurrency and servers are the driver's
    home: str | None = None  # the driver's data home (--home): environment ids resolve there, as in the driver
    state: dict[str, Any] = field(default_factory=dict)

    async def open(self, resources: Any) -> None:
        if self.home is not None:
            set_home(Path(self.home))
        self.state["resources"] = resources
        self.state["references"] = ReferenceCache()
        self.state["sandbox"] = await resources.get("sandbox", lambda: ValidatorSandbox(
            timeout_s=self.settings.timeout_s, workers=self.settings.workers))

    def _target(self, target: Any) -> Target:
        """`target` with what gating needs (its skeleton's free fields and convention), read once per worker: the
        items come one scenario each, and a skeleton is read and parsed in milliseconds."""
        key = target.id if isinstance(target, EnvSkeleton) else str(target)
        targets: dict[str, Target] = self.state.setdefault("targets", {})
        if key not in targets:
            targets[key] = target_of(target)
        return targets[key]

    async def _factory(self, target: Any) -> EpisodeFactory:
        """The episodes of this worker's server for `target` (started on its first scenario); a server that
        does not start fails its scenarios, as locally, unless the target itself is wrong."""
        try:
            server = await self.state["resources"].get(
                f"server:{self._target(target).key}",
                lambda: launch_server(target, transport=self.settings.transport, scenarios=()))
        except (UsageError, ValidatorError):
            raise
        except Exception as exc:
            return failing_factory(exc)
        factory: EpisodeFactory = server.episode
        return factory

    async def run(self, out: Path, on_item: ItemCallback, item: tuple[Any, Item]) -> None:
        target, scenario = item
        report = await judge(scenario, await self._factory(target), self.state["sandbox"], self._target(target),
                             self.state["references"], require_reference=self.settings.require_reference,
                             mutation=self.settings.mutation)
        append_jsonl(out / self.results_name, report_line(report))
        on_item("gate", f"{report.env_id}/{report.scenario_id}", "passed" if report.passed else "rejected")


class RayGate(RayCommand):
    """The scenarios check's Ray runner (qa/cli.py RemoteGate): `scenarios check --ray`."""

    def run(self, items: list[tuple[Any, Item]], results: ResultsFile, settings: GateSettings) -> None:
        """Judge every item on the cluster, `settings.concurrency` at a time per worker, its line appended to
        `results` by this driver as it comes back."""
        job = GateJob(results.path.name, settings, driver_home())
        with driver_session():  # nothing of Ray's in the --json list on stdout
            self.item_run(job, results.path.parent, per_worker=settings.concurrency).run(items)

