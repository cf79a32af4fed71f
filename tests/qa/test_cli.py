"""`envscaler-mcp scenarios check` with a fake launcher (fixture) in place of real servers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import envscaler_mcp.qa.batch
from envscaler_mcp.catalog.store import save_scenarios
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from tests.qa.fake_episode import fake_shop_episode
from tests.qa.test_gate import CANCELLED, O2_UNTOUCHED, scenario

runner = CliRunner()


@pytest.fixture
def fake_launch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    launched: list[tuple[str, str]] = []

    @asynccontextmanager
    async def launch_server(target: str, transport: str = "http", **options: Any) -> AsyncIterator[Any]:
        # rendered without scenarios: every episode is opened at the state the gate hands it
        assert options.get("scenarios") == ()
        launched.append((target, transport))
        if target == "down":
            raise OSError("address already in use")
        if target == "nope":
            raise UsageError("unknown environment 'nope'")
        yield SimpleNamespace(episode=fake_shop_episode)

    monkeypatch.setattr(envscaler_mcp.qa.batch, "launch_server", launch_server)
    return launched


def write_set(tmp_path: Path) -> tuple[Path, str, str]:
    good, bad = scenario(), scenario([(CANCELLED, True), (O2_UNTOUCHED, True)])
    path = tmp_path / "fake_shop.jsonl"
    save_scenarios([good, bad], path)
    return path, good.id, bad.id


def test_check_prints_a_table_and_exits_non_zero_on_a_rejected_scenario(
        tmp_path: Path, fake_launch: list[tuple[str, str]]) -> None:
    path, good, bad = write_set(tmp_path)
    result = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path)], env={"COLUMNS": "160"})
    assert result.exit_code == 1, result.output
    assert fake_launch == [("fake_shop", "pipe")]  # the default transport, as eval's
    assert "Scenario QA gate" in result.output and good in result.output and bad in result.output
    assert "c2 claims a change but is already True on the initial state" in result.output
    assert "1/2 scenarios passed the gate" in result.output


def test_check_json_and_id_filter(tmp_path: Path, fake_launch: list[tuple[str, str]]) -> None:
    path, good, _ = write_set(tmp_path)
    result = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--id", good, "--json", "--mutation"])
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["scenario_id"] == good and report["passed"] is True
    assert [s["name"] for s in report["steps"]] == ["validators", "initial_false", "replay", "final_true", "consistency",
                                                    "mutation",
                                                    "wrong_probes"]
    assert "0 uncaught; wrong-solution probes: 2 run, 0 passed the scoring" in result.stderr


def test_a_server_that_does_not_start_rejects_its_scenarios(tmp_path: Path, fake_launch: list[tuple[str, str]]) -> None:
    path, _, _ = write_set(tmp_path)
    result = runner.invoke(app, ["scenarios", "check", "down", "--scenarios", str(path), "--json"])
    assert result.exit_code == 1
    reports = json.loads(result.stdout)
    assert all(not r["passed"] for r in reports)
    assert "the episode failed: OSError: address already in use" in reports[0]["steps"][2]["reasons"]


def test_two_envs_with_one_scenario_file_is_a_usage_error(tmp_path: Path) -> None:
    path, _, _ = write_set(tmp_path)
    result = runner.invoke(app, ["scenarios", "check", "a", "b", "--scenarios", str(path)])
    assert result.exit_code != 0


def test_an_unknown_environment_is_a_usage_error_not_a_rejection(
        tmp_path: Path, fake_launch: list[tuple[str, str]]) -> None:
    path, _, _ = write_set(tmp_path)
    result = runner.invoke(app, ["scenarios", "check", "nope", "--scenarios", str(path)])
    assert isinstance(result.exception, UsageError) and "unknown environment 'nope'" in str(result.exception)


def test_check_groups_takes_wrong_solutions_derived_from_each_scenario(fake_launch: list[tuple[str, str]]) -> None:
    import anyio

    from envscaler_mcp.qa.batch import check_groups
    from envscaler_mcp.qa.wrong import WrongSolution

    def reference_only(sc: Any) -> list[WrongSolution]:
        return [WrongSolution(label="probe: the reference itself", calls=sc.reference_solution)]

    [plain] = anyio.run(lambda: check_groups([("fake_shop", [scenario()])]))
    assert plain.passed and not plain.wrong_solutions
    [probed] = anyio.run(lambda: check_groups([("fake_shop", [scenario()])], wrong_solutions=reference_only))
    assert not probed.passed
    assert probed.step("wrong_solutions").reasons == [
        "probe: the reference itself passes every validator; the checklist is too lenient"]


def test_the_collector_skips_what_exists_when_the_gate_starts_and_only_while_it_runs(
        fake_launch: list[tuple[str, str]]) -> None:
    import gc

    import anyio

    from envscaler_mcp.qa.batch import check_groups

    before = gc.get_freeze_count()
    frozen_while_judged: list[int] = []
    reports = anyio.run(lambda: check_groups([("fake_shop", [scenario()])],
                                             on_report=lambda _: frozen_while_judged.append(gc.get_freeze_count())))
    assert reports[0].passed and frozen_while_judged[0] > before  # the interpreter's objects were set aside
    assert gc.get_freeze_count() == before  # and handed back to the collector when the gate ended
    with pytest.raises(UsageError):
        anyio.run(lambda: check_groups([("nope", [scenario()])]))
    assert gc.get_freeze_count() == before  # also when it ended in an error
