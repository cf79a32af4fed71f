"""`import bfcl`: BFCL's multi-turn tasks -> a data folder (environments/<id>/skeleton.json, scenarios/<id>.jsonl).

Tasks are grouped by their combination of involved classes, one environment each. For each task the ground
truth is parsed, checked against the tools' schemas and executed as BFCL's checker executes it, in a confined
process (ground_truth.py: the initial state, every turn's expected results); a task that fails any of it is
left out with one line (BFCL's own ground truth of task 173 passes a ticket id as text where its docs ask for
an integer).
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
from envscaler_mcp.interop.bfcl.source import CLASS_STEMS, UNSUPPORTED, BfclSource
from envscaler_mcp.interop.bfcl.tools import parse_turns, signatures, tool_spec
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton, ToolSpec
from envscaler_mcp.skeleton.schema import extract_tools


@dataclass
class BfclImport:
    """What an import wrote and left out."""

    skeletons: list[EnvSkeleton] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # env id -> scenarios written
    unsupported: Counter[str] = field(default_factory=Counter)  # class -> tasks left out because of it
    left_out: list[str] = field(default_factory=list)  # one line per task that could not be converted


Task = tuple[str, dict[str, Any], list[list[str]]]  # (category, task entry, ground-truth call strings)


def _static_kinds(source: BfclSource, class_name: str) -> dict[str, str]:
    """Tool kinds by our static analysis of the class (state writes through helper objects are not seen)."""
    try:
        return {t.name: t.kind for t in extract_tools(source.module_source(CLASS_STEMS[class_name]), class_name)}
    except EnvironmentCodeError:
        return {}


def _check_arguments(task_id: str, turns: list[list[ToolCall]], tools: dict[str, ToolSpec]) -> None:
    for n, calls in enumerate(turns, start=1):
        for call in calls:
            if call.tool not in tools:
                raise ValueError(f"turn {n}: {call.tool} is a method of the classes but not in BFCL's function docs")
            problem = next(jsonschema.Draft202012Validator(tools[call.tool].input_schema).iter_errors(
                call.arguments), None)
            if problem is not None:
                raise ValueError(f"turn {n}: {call.tool}{call.arguments} does not fit the tool's schema: "
                                 f"{problem.message}")


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
            left_out = [c for c in classes if c in UNSUPPORTED]
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
    for category, task, truth in tasks:
        task_id = str(task.get("id"))
        try:
            turns = parse_turns(task_id, truth, params)
            _check_arguments(task_id, turns, tools)
            if len(turns) != len(task["question"]):
                raise ValueError(f"{len(task['question'])} turns but ground truth for {len(turns)}")
        except InputFileError as exc:
            result.left_out.append(exc.problem)
            continue
        except (ValueError, TypeError, KeyError) as exc:
            result.left_out.append(f"task {task_id}: {exc}")
            continue
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
    skeleton = skeleton_for(env, envmodule.class_name(classes), classes, text, final,
                            scenarios[0].initial_state, version)
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
