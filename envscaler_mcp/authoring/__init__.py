"""Authoring the bundled catalog's scenarios: spec helpers (specs.py) and the gate-then-write entry (write.py)."""

from envscaler_mcp.authoring.specs import (
    CallSpec,
    as_call,
    body_validator,
    call,
    expression_validator,
    from_specs,
    item,
    scenario,
    unchanged,
    with_wrong_solutions,
)
from envscaler_mcp.authoring.write import default_state, gate_scenarios, main, scenarios_path

__all__ = ["CallSpec", "as_call", "body_validator", "call", "default_state", "expression_validator", "from_specs",
           "gate_scenarios", "item", "main", "scenario", "scenarios_path", "unchanged", "with_wrong_solutions"]
