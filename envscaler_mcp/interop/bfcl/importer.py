"""`import bfcl`: BFCL's multi-turn tasks -> a data folder (environments/<id>/skeleton.json, scenarios/<id>.jsonl).

Tasks are grouped by their combination of involved classes, one environment each. For each task the ground
truth is parsed, checked against the tools' schemas and executed as BFCL's checker executes it, in a confined
process (ground_truth.py: the initial state, every turn's expected results); a task that fails any of it is
left out with one line. A ground-truth argument whose JSON type alone differs from the docs' widens that
parameter instead (task 173 closes 'ticket_001', the id its own data gives, where the docs say integer), with a
note; a ground truth that calls a function miss_func holds out until a later turn leaves its task out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from envscaler_mcp.catalog.store import save_scenarios, save_skeleton
from envscaler_mcp.errors import EnvironmentCodeError, InputFileError
from envscaler_mcp.interop.bfcl import envmodule
from envscaler_mcp.interop.bfcl.convert import scenario_from_task, skeleton_for
from envscaler_mcp.interop.bfcl.ground_truth import Request, execute_all
from envscaler_mcp.interop.bfcl.source import CLASS_STEMS, REQUIREMENTS, BfclSource
from envscaler_mcp.interop.bfcl.tools import parse_turns, signatures, tool_spec
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton, ToolSpec
from envscaler_mcp.skeleton.requirements import missing_requirements
from envscaler_mcp.skeleton.schema import extract_tools


@dataclass
class BfclImport:
    """What an import wrote and left out."""

    skeletons: list[EnvSkeleton] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # env id -> scenarios written
    unsupported: Counter[str] = field(default_factory=Counter)  # class -> tasks left out: its packages are missing
    left_out: list[str] = field(default_factory=list)  # one line per task that could not be converted
    widened: list[str] = field(default_factory=list)  # one line per parameter type widened for the ground truth


Task = tuple[str, dict[str, Any], list[list[str]]]  # (category, task entry, ground-truth call strings)


def _static_kinds(source: BfclSource, class_name: str) -> dict[str, str]:
    """Tool kinds by our static analysis of the class (state writes through helper objects are not seen)."""
    try:
        return {t.name: t.kind for t in extract_tools(source.module_source(CLASS_STEMS[class_name]), class_name)}
    except EnvironmentCodeError:
        return {}


_JSON_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def _widened(tool: ToolSpec, problem: jsonschema.ValidationError) -> str | None:
    """Let a parameter also take the JSON type of the ground truth's value, when only its type did not fit the
    docs (BFCL's classes do not check types, and its checker executes the call as it is); the note, or None."""
    if problem.validator != "type" or len(problem.absolute_path) != 1 or type(problem.instance) not in _JSON_TYPE:
        return None
    name = str(problem.absolute_path[0])
    properties = tool.input_schema.get("properties")
    schema = properties.get(name) if isinstance(properties, dict) else None
    wanted = schema.get("type") if isinstance(schema, dict) else None
    if not isinstance(schema, dict) or not isinstance(wanted, str):
        return None
    given = _JSON_TYPE[type(problem.instance)]
    schema["type"] = [wanted, given]
    return (f"{tool.name}: parameter {name} also takes a {given}: the ground truth passes {problem.instance!r} where "
            f"BFCL's docs say {wanted} (its data holds such values; BFCL executes the call as it is)")


def _check_arguments(task_id: str, turns: list[list[ToolCall]], tools: dict[str, ToolSpec]) -> list[str]:
    """ValueError for a ground-truth call that does not fit its tool's schema; a parameter whose type alone does
    not fit is widened instead (in `tools`, in place), one note each."""
    notes = []
    for n, calls in enumerate(turns, start=1):
        for call in calls:
            if call.tool not in tools:
                raise ValueError(f"turn {n}: {call.tool} is a method of the classes but not in BFCL's function docs")
            while (problem := next(jsonschema.Draft202012Validator(tools[call.tool].input_schema).iter_errors(
                    call.arguments), None)) is not None:
                note = _widened(tools[call.tool], problem)
                if note is None:
                    raise ValueError(f"turn {n}: {call.tool}{call.arguments} does not fit the tool's schema: "
                                     f"{problem.message}")
                notes.append(f"task {task_id}: {note}")
    return notes


def _check_held_out(task: dict[str, Any], turns: list[list[ToolCall]]) -> None:
    """ValueError when a turn's ground truth calls a function miss_func holds out until a later turn: BFCL executes
    any method of its instances, offered or not; the harness offers a tool only from its turn (docs/bfcl.md)."""
    added = {int(k): set(v) for k, v in (task.get("missed_function") or {}).items()}
    for n, calls in enumerate(turns):
        for call in calls:
            later = [k for k, names in added.items() if k > n and call.tool in names]
            if later:
                raise ValueError(f"turn {n + 1}: the ground truth calls {call.tool}, which BFCL holds out until turn "
                                 f"{min(later) + 1}; a tool is offered only from its turn")


def group_tasks(source: BfclSource, categories: list[str], limit: int | None, result: BfclImport
                ) -> dict[tuple[str, ...], list[Task]]:
    """The tasks to import by combination of classes (at most `limit` per category); unsupported ones counted."""
    groups: dict[tuple[str, ...], list[Task]] = {}
    for category in categories:
        truths = source.ground_truth(category)
        tasks = source.tasks(category)
        for task in tasks[:limit] if limit is not None else tasks:
            task_id = str(task.get("id"))
            classes = tuple(sorted(task.get("involved_classes") or []))
            unknown = [c for c in classes if c not in CLASS_STEMS]
            if unknown or not classes:
                result.left_out.append(f"task {task_id}: unknown classes {', '.join(unknown) or '(none)'}")
                continue
            left_out = [c for c in classes if missing_requirements(REQUIREMENTS.get(c, []))]
            if left_out:
                result.unsupported.update(left_out[:1])
                continue
            if task_id not in truths:
                result.left_out.append(f"task {task_id}: no ground truth in possible_answer/")
                continue
            groups.setdefault(classes, []).append((category, task, truths[task_id]))
    return groups


def import_environment(source: BfclSource, classes: list[str], tasks: list[Task], result: BfclImport
                       ) -> tuple[EnvSkeleton, list[Scenario]] | None:
    """The environment of one combination of classes and the scenarios of its tasks (None: none converted)."""
    version = source.version()
    env = envmodule.env_id(classes)
    specs = {name: [tool_spec(doc, "state_change") for doc in source.func_docs(name)] for name in classes}
    text = envmodule.build_module(source, classes, specs)
    params: dict[str, list[str]] = {}
    for name in classes:
        params.update(signatures(source.module_source(CLASS_STEMS[name]), name))
    tools = {t.name: t for name in classes for t in specs[name]}
    ready: list[tuple[str, dict[str, Any], Request]] = []
    notes: list[str] = []
    for category, task, truth in tasks:
        task_id = str(task.get("id"))
        try:
            turns = parse_turns(task_id, truth, params)
            widened = _check_arguments(task_id, turns, tools)
            _check_held_out(task, turns)
            if len(turns) != len(task["question"]):
                raise ValueError(f"{len(task['question'])} turns but ground truth for {len(turns)}")
        except InputFileError as exc:
            result.left_out.append(exc.problem)
            continue
        except (ValueError, TypeError, KeyError) as exc:
            result.left_out.append(f"task {task_id}: {exc}")
            continue
        notes += widened
        ready.append((category, task, Request(task=task, turns=turns, long_context=category == "long_context")))
    try:
        executions = execute_all(text, [request for _, _, request in ready])
    except RuntimeError as exc:
        result.left_out.append(f"{len(ready)} task(s) of {'+'.join(classes)}: {exc}")
        return None
    scenarios: list[Scenario] = []
    changed: set[str] = set()
    seen: set[str] = set()
    for (category, task, request), execution in zip(ready, executions, strict=True):
        if isinstance(execution, str):
            result.left_out.append(f"task {task.get('id')}: {execution}")
            continue
        try:
            scenario = scenario_from_task(task, category, env, request.turns, execution, version)
        except (ValueError, TypeError, KeyError) as exc:
            result.left_out.append(f"task {task.get('id')}: {exc}")
            continue
        changed |= execution.changed
        if scenario.id not in seen:
            seen.add(scenario.id)
            scenarios.append(scenario)
    if not scenarios:
        return None
    kinds = {}
    for name in classes:
        kinds.update(_static_kinds(source, name))
    final = [t.model_copy(update={"kind": "state_change" if kinds.get(t.name, "state_change") == "state_change"
                                  or t.name in changed else "query"})
             for name in classes for t in specs[name]]
    requirements = sorted({r for name in classes for r in REQUIREMENTS.get(name, [])})
    skeleton = skeleton_for(env, envmodule.class_name(classes), classes, text, final,
                            scenarios[0].initial_state, version, requirements)
    skeleton.provenance.notes.extend(notes)
    result.widened += notes
    return skeleton, scenarios


def import_bfcl(path: Path, out: Path, categories: list[str], limit: int | None = None) -> BfclImport:
    """Convert the chosen categories of the release at `path` into the data folder `out`."""
    source = BfclSource(path)
    result = BfclImport()
    for classes, tasks in sorted(group_tasks(source, categories, limit, result).items()):
        made = import_environment(source, list(classes), tasks, result)
        if made is None:
            continue
        skeleton, scenarios = made
        save_skeleton(skeleton, out / "environments")
        save_scenarios(scenarios, out / "scenarios" / f"{skeleton.id}.jsonl", index=True)
        result.skeletons.append(skeleton)
        result.counts[skeleton.id] = len(scenarios)
    return result
