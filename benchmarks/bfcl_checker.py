"""BFCL's own multi-turn checker, imported from the unzipped bfcl-eval wheel (or tests/fixtures/bfcl), and the
calls of a trajectory in the shape it reads: per turn, per model step, each call as Python call text.

The multi-turn checker imports only its classes (no stubs needed); MathAPI's module needs mpmath.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from envscaler_mcp.scenario.models import ToolCall

UTILS = "bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils"
Decoded = list[list[list[str]]]  # per turn, per model step, the calls' text


def bfcl_checker(root: Path) -> Any:
    """BFCL's multi_turn_checker module, imported from a folder holding bfcl_eval/ (its own code, unchanged)."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")


def call_text(call: ToolCall) -> str:
    """A call as BFCL's decoded model output writes it: `name(arg=<python literal>, ...)`."""
    return f"{call.tool}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


_RUNS = [0]


def checker_verdict(checker: Any, task: dict[str, Any], truth: list[list[str]], decoded: Decoded) -> tuple[bool, str]:
    """BFCL's verdict (valid, error type) on `decoded`; BFCL keeps its instances in a module's globals by run
    name, so each verdict runs under a name of its own and drops them afterwards."""
    _RUNS[0] += 1
    name = f"agreement_run_{_RUNS[0]}"
    utils = sys.modules[UTILS]
    try:
        result = checker.multi_turn_checker(decoded, truth, task, str(task["id"]).rsplit("_", 1)[0], name)
    finally:
        for key in [k for k in vars(utils) if k.startswith(name)]:
            del vars(utils)[key]
    return bool(result["valid"]), str(result.get("error_type", ""))
