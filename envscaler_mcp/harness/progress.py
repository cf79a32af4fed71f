"""The live progress display of a run: a rich bar with pass rate, cost and ETA, and what the local model is
doing (loading, reading the prompt N/M tokens, generating) while it works, so a slow machine visibly works."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from envscaler_mcp._usage import Usage
from envscaler_mcp.harness.models import EpisodeResult


def local_model_activity() -> str:
    """What this process's local model server is doing ('' when none runs or it is idle)."""
    from envscaler_mcp.providers.local.server import activity_line

    return activity_line()


class _ActivityProgress(Progress):
    """The bar, and under it the model's activity re-read at every refresh (it changes between episodes): on a
    line of its own, so an 80-column terminal does not squeeze it into a wrapped column beside the bar."""

    def __init__(self, *columns: Any, activity: Callable[[], str], **options: Any) -> None:
        self.activity = activity  # before Progress sets up its display, which renders
        super().__init__(*columns, **options)

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        line = self.activity()
        if line:
            yield Text(f"  {line}", style="dim", overflow="ellipsis", no_wrap=True)


class RunProgress:
    """Counts finished episodes and shows pass rate, mean score, cost and infra errors as they come in."""

    def __init__(
        self,
        total: int,
        *,
        done: int = 0,
        enabled: bool = True,
        console: Console | None = None,
        activity: Callable[[], str] = local_model_activity,
    ) -> None:
        self.successes = 0
        self.scored = 0
        self.score_sum = 0.0
        self.infra = 0
        self.usage = Usage()
        self._progress = _ActivityProgress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            activity=activity,
            console=console or Console(stderr=True),
            disable=not enabled,
            transient=False,
        )
        self._task: TaskID = self._progress.add_task("eval", total=total, completed=done, stats=self._stats())

    def _stats(self) -> str:
        rate = f"{100 * self.successes / self.scored:.0f}%" if self.scored else "-"
        mean = f"{self.score_sum / self.scored:.2f}" if self.scored else "-"
        cost = "?" if self.usage.cost_usd is None else f"${self.usage.cost_usd:.3f}"
        infra = f" infra {self.infra}" if self.infra else ""
        return f"pass {rate} score {mean} cost {cost}{infra}"

    def add(self, result: EpisodeResult) -> None:
        """Count one finished episode."""
        self.usage = self.usage + result.agent_usage + result.user_usage
        if result.status == "infra_error":
            self.infra += 1
        elif result.score is not None:
            self.scored += 1
            self.score_sum += result.score
            self.successes += bool(result.success)
        self._progress.update(self._task, advance=1, stats=self._stats())

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()
