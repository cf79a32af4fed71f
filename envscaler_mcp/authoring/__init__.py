"""Authoring the bundled catalog's scenarios: spec helpers (specs.py), read-only questions (readonly.py) and the
gate-then-write entry (write.py)."""

from envscaler_mcp.authoring.readonly import read_only, read_only_scenario, transcript_validator
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
           "gate_scenarios", "item", "main", "read_only", "read_only_scenario", "scenario", "scenarios_path",
           "transcript_validator", "unchanged", "with_wrong_solutions"]
