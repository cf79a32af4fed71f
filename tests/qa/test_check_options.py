"""`scenarios check`'s options are one typed dataclass: every option reaches the gate's GateSettings, locally and
on the Ray runner, and the choices are the stages' own types."""

from __future__ import annotations

import dataclasses
from typing import Any, get_args, get_type_hints

import pytest
from typer.testing import CliRunner

from envscaler_mcp import launch
from envscaler_mcp.cli import app, load_command
from envscaler_mcp.errors import UsageError
from envscaler_mcp.qa import cli as qa_cli
from envscaler_mcp.qa.batch import GateSettings
from envscaler_mcp.qa.check_options import CheckOptions
from envscaler_mcp.qa.results import ResultsFile

runner = CliRunner()
GIVEN = ["--transport", "http", "--timeout", "0.5", "--validator-workers", "3", "--concurrency", "5", "--servers", "6",
         "--mutation", "--allow-no-reference"]
EXPECTED = GateSettings(transport="http", timeout_s=0.5, workers=3, mutation=True, require_reference=False,
                        concurrency=5, servers=6)


def test_the_command_declares_exactly_the_dataclass_fields() -> None:
    check = load_command("scenarios").commands["check"]  # type: ignore[attr-defined]
    assert [p.name for p in check.params] == [f.name for f in dataclasses.fields(CheckOptions)]
    assert (check.help or "").startswith("Gate scenarios: validators return bools")


def test_the_transport_choice_is_the_launch_stage_own_type() -> None:
    hints = get_type_hints(CheckOptions, include_extras=True)
    assert get_args(hints["transport"])[0] is launch.Transport


def test_every_option_reaches_the_gate_settings() -> None:
    options = CheckOptions(transport="http", timeout=0.5, validator_workers=3, mutation=True, allow_no_reference=True,
                           concurrency=5, servers=6)
    assert options.gate_settings() == EXPECTED
    defaults = CheckOptions().gate_settings()
    assert (defaults.transport, defaults.require_reference, defaults.servers) == ("pipe", True, 2)


@pytest.mark.parametrize(("options", "message"), [
    (CheckOptions(resume=True), "--resume continues a --results FILE"),
    (CheckOptions(ray_workers=2), "--ray-workers needs --ray"),
    (CheckOptions(workers="0"), "--workers: '0' is neither"),
    (CheckOptions(workers="many"), "--workers: 'many' is neither"),
    (CheckOptions(ray="auto", workers="2"), "with --ray use --ray-workers"),
])
def test_contradictions_are_usage_errors(options: CheckOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        options.gate_settings()


def test_the_command_line_hands_its_settings_to_the_local_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[GateSettings] = []

    async def gate(groups: Any, settings: GateSettings, **_: Any) -> list[Any]:
        seen.append(settings)
        return []

    monkeypatch.setattr(qa_cli, "check_groups", gate)
    result = runner.invoke(app, ["scenarios", "check", "library_loans", *GIVEN])
    assert isinstance(result.exception, UsageError) and "no scenarios to check" in str(result.exception)
    assert seen == [EXPECTED]


def test_the_command_line_hands_its_settings_to_the_ray_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int | None, GateSettings, int]] = []

    class Remote:
        def __init__(self, address: str, workers: int | None) -> None:
            self.address, self.workers = address, workers

        def connect(self) -> None:
            pass

        def run(self, items: list[tuple[Any, Any]], results: ResultsFile, settings: GateSettings) -> None:
            seen.append((self.address, self.workers, settings, len(items)))

    monkeypatch.setattr(qa_cli, "_remote_factory", [Remote])
    result = runner.invoke(app, ["scenarios", "check", "library_loans", *GIVEN, "--ray", "auto", "--ray-workers", "2"])
    assert isinstance(result.exception, UsageError)  # the fake judged nothing
    [(address, workers, settings, items)] = seen
    assert (address, workers, settings) == ("auto", 2, EXPECTED) and items > 0



@pytest.mark.parametrize(("cpus", "workers", "listed", "ran"), [
    (2, "auto", False, "one process"),  # one worker per 3 CPUs: never more than one here
    (12, "auto", True, "one process"),  # four might run, but 10 scenarios do not repay a second one
    (2, "3", True, "workers"),
])
def test_the_headers_are_listed_up_front_only_when_workers_may_run_them(
        monkeypatch: pytest.MonkeyPatch, cpus: int, workers: str, listed: bool, ran: str) -> None:
    """One process judges each environment's scenarios when its turn comes; only a driver of several workers
    lists every scenario's header before the first is judged (its memory then grows with the catalog)."""
    from envscaler_mcp.adapters import local_run

    monkeypatch.setattr(local_run, "cpu_count", lambda: cpus)
    monkeypatch.setattr(local_run, "available_mb", lambda: 100 * local_run.WORKER_MB)
    calls: list[int] = []
    real = qa_cli._listed
    monkeypatch.setattr(qa_cli, "_listed", lambda groups: calls.append(1) or real(groups))
    seen: list[str] = []

    async def gate(groups: Any, settings: GateSettings, **_: Any) -> list[Any]:
        seen.append("one process")
        return []

    def run(self: Any, items: Any, results: Any, settings: Any) -> None:
        seen.append("workers")

    monkeypatch.setattr(qa_cli, "check_groups", gate)
    monkeypatch.setattr(local_run.LocalGate, "run", run)
    result = runner.invoke(app, ["scenarios", "check", "library_loans", "--workers", workers, "--concurrency", "8"])
    assert isinstance(result.exception, UsageError) and "no scenarios to check" in str(result.exception)
    assert (bool(calls), seen) == (listed, [ran])
