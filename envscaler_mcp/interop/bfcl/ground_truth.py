"""A task's ground truth executed as BFCL's checker executes it: one instance per involved class, loaded by its
`_load_scenario(initial_config, long_context)` and kept across turns, every call's return value turned into the
text BFCL compares (multi_turn_utils.execute_multi_turn_func_call)."""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass
from typing import Any

from envscaler_mcp.interop.bfcl.envmodule import fresh_classes
from envscaler_mcp.scenario.models import ToolCall


@dataclass
class Execution:
    """What the ground truth of one task did."""

    initial_state: dict[str, Any]  # class name -> its instance as JSON (envruntime.encode_instance)
    outputs: list[list[str]]  # per turn, the text BFCL records for each ground-truth call
    states: list[dict[str, Any]]  # per turn, the state after that turn's calls
    changed: set[str]  # tools whose call changed some class's public attributes


def _public(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if not k.startswith("_")}


def execute(module: types.ModuleType, task: dict[str, Any], turns: list[list[ToolCall]], long_context: bool
            ) -> Execution:
    """Run `turns` on fresh instances of the task's classes, from fresh modules of the environment `module`'s
    sources."""
    runtime = module.__dict__
    classes = fresh_classes(module).classes
    encode_instance, bfcl_output = runtime["encode_instance"], runtime["bfcl_output"]
    config = task.get("initial_config") or {}
    instances: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for name in task["involved_classes"]:
        cls, _ = classes[name]
        instance = cls()
        if hasattr(instance, "_load_scenario"):
            instance._load_scenario(copy.deepcopy(config.get(name, {})), long_context=long_context)
        instances[name] = instance
        owner.update((method, name) for method in dir(instance)
                     if not method.startswith("_") and callable(getattr(instance, method)))
    initial = {name: encode_instance(instance) for name, instance in instances.items()}
    outputs: list[list[str]] = []
    states: list[dict[str, Any]] = []
    changed: set[str] = set()
    for calls in turns:
        row = []
        for call in calls:
            instance = instances[owner[call.tool]]
            before = _public(encode_instance(instance))
            try:
                # fresh arguments, as BFCL's eval of the call text makes them: a method may keep and change them
                row.append(bfcl_output(getattr(instance, call.tool)(**copy.deepcopy(call.arguments))))
            except Exception as exc:  # BFCL records the error as the call's result
                row.append(f"Error during execution: {exc}")
            if _public(encode_instance(instance)) != before:
                changed.add(call.tool)
        outputs.append(row)
        states.append({name: encode_instance(instance) for name, instance in instances.items()})
    return Execution(initial_state=initial, outputs=outputs, states=states, changed=changed)
