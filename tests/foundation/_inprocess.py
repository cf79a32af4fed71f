"""Test helper: run an environment class in this process (tests only; the product never does this)."""

from __future__ import annotations

import copy
from typing import Any

from envscaler_mcp.skeleton.models import EnvSkeleton


def new_instance(skeleton: EnvSkeleton, state: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {}
    exec(compile(skeleton.class_source, f"<{skeleton.id}>", "exec"), namespace)
    cls = namespace[skeleton.class_name]
    try:
        instance = cls(None)
    except TypeError:
        instance = cls()
    for key, value in copy.deepcopy(state).items():
        setattr(instance, key, value)
    return instance


def state_of(instance: Any, skeleton: EnvSkeleton) -> dict[str, Any]:
    return copy.deepcopy({a.name: getattr(instance, a.name) for a in skeleton.state})


def run_validator(source: str, initial_state: dict[str, Any], final_state: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {"initial_state": copy.deepcopy(initial_state)}
    exec(compile(source, "<validator>", "exec"), namespace)
    return namespace["check_func"](copy.deepcopy(final_state))
