"""The parts of an environment a ScenGenerator prompt shows, from the whole down to what still fits a small
context: the state with a sample of records per collection (always with the records the task names and the
records those point at), and the environment code as written, as an outline (signatures and docstrings), or
not at all. `synth._common_fit` picks the richest rung of a ladder that fits the model's context.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp.qa.grounding import named_records
from envscaler_mcp.synth.skel.quality import dump_state

STATE_LIMIT = 60000  # characters of state shown when the context is not known
SAMPLES = (None, 8, 5, 3, 2, 1)  # records per collection, from all of them down to one


def _is_collection(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(r, dict) for r in value.values())


def _linked(state: Mapping[str, Any], picked: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The records that the picked ones point at: a string value of a picked record that is a key of another
    collection (an order's customer id, a loan's book id)."""
    keys = {key: name for name, value in state.items() if _is_collection(value) for key in value}
    out: set[tuple[str, str]] = set()
    for name, key in picked:
        for value in state[name][key].values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item in keys and item != key:
                    out.add((keys[item], item))
    return out


def sample_state(state: State, per_collection: int, task: str = "") -> tuple[State, list[str]]:
    """The state with at most `per_collection` records of each keyed collection besides the records `task` names
    and those they point at (kept first, in the state's order), and a list attribute cut to as many items;
    with a note per shortened attribute ('orders: 5 of 48 records shown')."""
    keep = named_records(state, task) if task else set()
    keep |= _linked(state, keep)
    sample: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in state.items():
        if isinstance(value, dict) and _is_collection(value):
            named = [k for k in value if (name, k) in keep]
            others = [k for k in value if (name, k) not in keep][:max(0, per_collection - len(named))]
            chosen = set(named) | set(others)
            sample[name] = {k: r for k, r in value.items() if k in chosen}
            if len(chosen) < len(value):
                notes.append(f"{name}: {len(chosen)} of {len(value)} records shown")
        elif isinstance(value, list) and len(value) > per_collection:
            sample[name] = value[:per_collection]
            notes.append(f"{name}: {per_collection} of {len(value)} items shown")
        else:
            sample[name] = value
    return sample, notes


def state_view(state: State, per_collection: int | None, task: str = "") -> str:
    """The state as a prompt shows it: all of it (per_collection None, up to STATE_LIMIT characters) or a
    sample, followed by a line saying what was left out."""
    if per_collection is None:
        return dump_state(state, limit=STATE_LIMIT)
    sample, notes = sample_state(state, per_collection, task)
    text = dump_state(sample, limit=STATE_LIMIT)
    if notes:
        text += ("\n(an excerpt: " + "; ".join(notes) + "; the records the task names are all shown, the "
                 "tools can look up the others)")
    return text


def without_descriptions(schema: Any) -> Any:
    """A JSON schema without its 'description' and 'title' texts (the shape and the constraints stay)."""
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items()
                if not (k in ("description", "title") and isinstance(v, str))}
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    return schema


def outline(source: str) -> str:
    """The class as signatures and docstrings: every method body but `__init__`'s (which sets the state
    attributes) is replaced by `...`. The source itself when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != "__init__":
            doc = ast.get_docstring(node)
            node.body = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body.append(ast.Expr(ast.Constant(Ellipsis)))
    return ast.unparse(tree)


def code_and_state_ladder(class_source: str, state: State, task: str = "") -> list[dict[str, str]]:
    """Rungs of (class_source, state) for a prompt that shows both, richest first: the code shrinks to its
    outline before the state loses records, and goes last."""
    brief = outline(class_source)
    rungs = [{"class_source": class_source, "state": state_view(state, None, task)}]
    rungs += [{"class_source": brief, "state": state_view(state, n, task)} for n in SAMPLES]
    rungs += [{"class_source": "", "state": state_view(state, n, task)} for n in SAMPLES[3:]]
    return rungs


def state_ladder(state: State, task: str = "") -> list[dict[str, str]]:
    """Rungs of `state` alone, from the whole state to one record per collection."""
    return [{"state": state_view(state, n, task)} for n in SAMPLES]
