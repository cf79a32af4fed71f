"""Fixtures shared by the report tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.harness.rundir import RunDir


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run folders whose results.jsonl is read whole (scanned) from now on."""
    seen: list[Path] = []
    real = RunDir.scan_results

    def counted(self: RunDir, **kw: Any) -> Any:
        seen.append(self.path)
        return real(self, **kw)

    monkeypatch.setattr(RunDir, "scan_results", counted)
    return seen
