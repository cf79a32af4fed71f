"""The sandbox says which isolation layers are in force, and says it loudly when one is not."""

from __future__ import annotations

import logging

import pytest

from envscaler_mcp.isolation.report import IsolationReport, Layer
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio
PASS = [ChecklistItem(id="c1", description="", validator="def check_func(s):\n    return True\n")]


def test_level_and_refused_layers() -> None:
    report = IsolationReport(subject="validators", layers=[
        Layer(name="python-restrictions", active=True, detail="x"),
        Layer(name="seccomp", active=True, detail="y"),
        Layer(name="landlock-fs", active=False, detail="this kernel has no Landlock")])
    assert report.level == "partial" and report.refused == ["landlock-fs"]
    assert report.warning() == ("validators run with reduced isolation (partial) - not in force: "
                                "landlock-fs: this kernel has no Landlock")
    dumped = report.model_dump()
    assert dumped["level"] == "partial" and dumped["refused"] == ["landlock-fs"]  # what run.json gets


async def test_a_layer_left_out_is_reported_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="envscaler_mcp.isolation"):
        async with ValidatorSandbox(memory_mb=256, _test_seam={"skip": ["landlock"]}) as sb:
            assert [r.passed for r in await sb.run(PASS, {}, {})] == [True]
            report = sb.isolation
    assert {"landlock-fs", "landlock-net", "landlock-scope"} <= set(report.refused)
    assert report.level == "partial"
    assert any("landlock-fs: left out by a test" in r.getMessage() for r in caplog.records)


async def test_this_machine_reports_every_layer_it_can_apply(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="envscaler_mcp.isolation"):
        async with ValidatorSandbox(memory_mb=256) as sb:
            report = sb.isolation
        async with ValidatorSandbox(memory_mb=256, isolation=False) as sb:
            off = sb.isolation
    names = {layer.name for layer in report.layers}
    assert {"seccomp", "landlock-fs", "network-namespace", "pid-namespace", "fresh-process-per-scenario"} <= names
    if report.level != "full":  # a kernel that refuses a layer: then it must have been said out loud
        assert any("reduced isolation" in r.getMessage() for r in caplog.records)
    assert off.level == "off" and "seccomp" in off.refused
