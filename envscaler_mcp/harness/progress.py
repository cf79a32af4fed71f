"""The live progress display of a run: a rich bar with pass rate, cost and ETA, and what the local model is
doing (loading, reading the prompt N/M tokens, generating) while it works, so a slow machine visibly works."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
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


class ActivityColumn(ProgressColumn):
    """A column re-read at every refresh from a callable (the model's activity changes between episodes)."""

    def __init__(self, activity: Callable[[], str]) -> None:
        super().__init__()
        self.activity = activity

    def render(self, task: Task) -> Text:
        """The current activity text, dimmed."""
        return Text(self.activity(), style="dim")


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
        self._progress = Progress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            ActivityColumn(activity),
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
