"""Our skeletons and scenarios -> EnvScaler's env and scenario metadata items.

For a natively made skeleton every EnvScaler field is derived from our data. For an imported one, the
fields kept in `extra["envscaler"]` are written back verbatim, in the original key order, so an
import -> export round trip reproduces the original items exactly.
"""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from envscaler_mcp.interop.envscaler_format import ENV_FIELDS, SCENARIO_FIELDS
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.skeleton.schema import env_structure, find_class, parse_module

EXTRA_KEY = "envscaler"
ORDER_KEY = "envscaler_key_order"
POSITION_KEY = "envscaler_position"  # index of the item in the imported file, to restore file order
# A scenario item's own field for what EnvScaler has no place for: transcript items (EnvScaler's runner calls
# every check_func on the final state, so they stay out of checklist/checklist_with_func) and the reference
# answer. EnvScaler ignores it; our import reads it back.
OWN_KEY = "envscaler_mcp"


def envscaler_env_id(skeleton: EnvSkeleton) -> str:
    """The env_id an exported item carries: the original id of an imported skeleton, else our id."""
    prov = skeleton.provenance
    return prov.source_id if prov.source == "envscaler-import" and prov.source_id else skeleton.id


def _class_def_text(source: str, cls: ast.ClassDef) -> str:
    """Source from the top of the module through the end of __init__ (EnvScaler's env_class_def)."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    end = init.end_lineno if init is not None else cls.body[0].end_lineno if cls.body else cls.lineno
    return "\n".join(source.splitlines()[: end or cls.lineno]) + "\n"


def _method_code(source: str, cls: ast.ClassDef, name: str) -> str:
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == name)
    start = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    lines = source.splitlines()[start - 1 : func.end_lineno]
    return textwrap.dedent("\n".join(lines)) + "\n"


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def derived_env_item(skeleton: EnvSkeleton) -> dict[str, Any]:
    """Every EnvScaler env field, computed from our skeleton (no `extra` used)."""
    source = skeleton.class_source
    cls = find_class(parse_module(source), skeleton.class_name)
    return {
        "env_id": envscaler_env_id(skeleton),
        "environment_summary": skeleton.summary,
        "environment_introduction": skeleton.introduction,
        "state_space_definition": [
            {
                "entity": e.name,
                "attributes": ", ".join(a.name for a in e.attributes),
                "description": e.description,
            }
            for e in skeleton.entities
        ],
        "constraints_rules": list(skeleton.rules),
        "operation_list": [
            {
                "operation_name": t.name,
                "operation_description": _first_paragraph(t.description),
                "operation_type": t.kind,
                "code": _method_code(source, cls, t.name),
            }
            for t in skeleton.tools
        ],
        "env_class_name": skeleton.class_name,
        "env_class_code": source,
        "env_class_def": _class_def_text(source, cls),
        "env_structure": env_structure(source, skeleton.class_name),
        "tools": [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in skeleton.tools
        ],
    }


def derived_scenario_item(scenario: Scenario, skeleton: EnvSkeleton) -> dict[str, Any]:
    """Every EnvScaler scenario field, computed from our scenario (no `extra` used); transcript items and the
    reference answer go under OWN_KEY."""
    state_items = [c for c in scenario.checklist if c.kind == "state"]
    item = {
        "env_id": envscaler_env_id(skeleton),
        "env_class_name": skeleton.class_name,
        "task_id": scenario.id or scenario.compute_id(),
        "init_config": scenario.initial_state,
        "task": scenario.task,
        "checklist": [c.description for c in state_items],
        "checklist_with_func": [
            {"check_item": c.description, "check_func": c.validator}
            for c in state_items
            if c.validator is not None
        ],
    }
    own = own_fields(scenario)
    if own:
        item[OWN_KEY] = own
    return item


def own_fields(scenario: Scenario) -> dict[str, Any]:
    """The transcript items (with their id and place in the checklist), the state items' ids and claims_change
    flags when they are not the defaults (c1, c2, ... by position; True), the reference answer and the user
    turns of a multi-turn scenario, if any."""
    own: dict[str, Any] = {}
    transcript = [
        {"position": n, "id": c.id, "check_item": c.description, "check_func": c.validator,
         "claims_change": c.claims_change}
        for n, c in enumerate(scenario.checklist) if c.kind == "transcript"
    ]
    if transcript:
        own["transcript_checks"] = transcript
    state = [(n, c) for n, c in enumerate(scenario.checklist, start=1) if c.kind == "state"]
    if any(c.id != f"c{n}" or not c.claims_change for n, c in state):
        own["state_items"] = [{"id": c.id, "claims_change": c.claims_change} for _, c in state]
    if scenario.reference_answer is not None:
        own["reference_answer"] = scenario.reference_answer
    if scenario.turns:
        own["turns"] = [turn.model_dump(mode="json", exclude_defaults=True) for turn in scenario.turns]
    return own


def _merge(derived: dict[str, Any], extra: dict[str, Any], default_order: tuple[str, ...]) -> dict[str, Any]:
    kept = extra.get(EXTRA_KEY) or {}
    merged = {**derived, **kept}
    order = extra.get(ORDER_KEY)
    if order is None:
        order = [*default_order, *(k for k in merged if k not in default_order)]
    return {key: merged[key] for key in order if key in merged}


def env_item(skeleton: EnvSkeleton) -> dict[str, Any]:
    """The EnvScaler env metadata item of a skeleton (imported fields restored verbatim)."""
    return _merge(derived_env_item(skeleton), skeleton.extra, ENV_FIELDS)


def scenario_item(scenario: Scenario, skeleton: EnvSkeleton) -> dict[str, Any]:
    """The EnvScaler scenario metadata item of a scenario (imported fields restored verbatim)."""
    return _merge(derived_scenario_item(scenario, skeleton), scenario.extra, SCENARIO_FIELDS)


def _position(extra: dict[str, Any]) -> tuple[int, int]:
    pos = extra.get(POSITION_KEY)
    return (0, pos) if isinstance(pos, int) else (1, 0)


def export_envscaler(
    items: list[tuple[EnvSkeleton, list[Scenario]]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(env_metadata keyed by env_id, scenario_metadata list) in EnvScaler's file shapes.

    Imported items come back in their original file order; the others follow in the given order.
    """
    envs: dict[str, Any] = {}
    scenarios: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for skeleton, env_scenarios in sorted(items, key=lambda pair: _position(pair[0].extra)):
        envs[envscaler_env_id(skeleton)] = env_item(skeleton)
        scenarios.extend((_position(s.extra), scenario_item(s, skeleton)) for s in env_scenarios)
    scenarios.sort(key=lambda pair: pair[0])  # stable: unpositioned scenarios keep their env order
    return envs, [item for _, item in scenarios]
