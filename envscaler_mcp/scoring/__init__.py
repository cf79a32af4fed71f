"""Scoring: the validator sandbox (worker processes with limits), the score rule and metrics, and state diffs.

Names are imported lazily so the worker process (`python -m envscaler_mcp.scoring.worker`) starts with
the standard library only.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CheckResult", "ValidatorSandbox"]


def __getattr__(name: str) -> Any:
    if name == "ValidatorSandbox":
        from envscaler_mcp.scoring.sandbox import ValidatorSandbox

        return ValidatorSandbox
    if name == "CheckResult":
        from envscaler_mcp.scoring.models import CheckResult

        return CheckResult
    raise AttributeError(f"module 'envscaler_mcp.scoring' has no attribute {name!r}")
