"""Test helper: run the command line in this process and keep its exit code and printed output."""

from __future__ import annotations

import pytest

from envscaler_mcp.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stdout) of `envscaler-mcp ARGS`."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().out


def os_layers(monkeypatch: pytest.MonkeyPatch, *, on: bool) -> None:
    """Make `import envscaler` find the OS layers all in force (on) or all refused (off) on this machine."""
    from envscaler_mcp.isolation import probe
    from envscaler_mcp.isolation.report import IsolationReport, Layer

    report = IsolationReport(subject="servers", layers=[
        Layer(name=name, active=on, detail="as the test says") for name in ("network-namespace", "landlock-fs",
                                                                             "seccomp")])
    monkeypatch.setattr(probe, "server_layers", lambda: report)
