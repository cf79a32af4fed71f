"""EnvScaler env and scenario metadata -> our EnvSkeleton and Scenario models.

Tools and state are re-derived from `env_class_code` with our extractor (public methods only, full
schemas). Every EnvScaler field our models cannot reproduce exactly, plus the ones named in
ALWAYS_KEPT, is kept verbatim in `extra["envscaler"]` with the original key order, so that an
export gives back the original items.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envscaler_mcp._json import State
from envscaler_mcp._outcome import DEFAULT_CONVENTION, ConventionChoice, guess_convention
from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.interop.envscaler_format import iter_env_metadata, read_scenario_metadata
from envscaler_mcp.interop.skips import Skipped
from envscaler_mcp.interop.to_envscaler import (
    EXTRA_KEY,
    ORDER_KEY,
    OWN_KEY,
    POSITION_KEY,
    derived_env_item,
    derived_scenario_item,
)
from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from envscaler_mcp.scenario.titles import title_from_task
from envscaler_mcp.skeleton.annotations import annotation_text, collect_module_types
from envscaler_mcp.skeleton.build import validate_state
from envscaler_mcp.skeleton.checks import check_determinism, check_findings
from envscaler_mcp.skeleton.free_fields import infer_free_fields
from envscaler_mcp.skeleton.models import Attribute, Entity, EnvSkeleton, Provenance
from envscaler_mcp.skeleton.schema import extract_state, extract_tools, parse_module

ALWAYS_KEPT_ENV = (
    "state_space_definition",
    "operation_list",
    "env_class_def",
    "env_structure",
    "tools",
    "env_class_name",
)
ALWAYS_KEPT_SCENARIO = ("task_id", "env_class_name", "checklist")


@dataclass
class ImportResult:
    """What an import produced: skeletons, scenarios by our env id, and per-item problems."""

    skeletons: list[EnvSkeleton] = field(default_factory=list)
    scenarios: dict[str, list[Scenario]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    duplicates: int = 0


def our_env_id(env_id: str, taken: set[str]) -> str:
    """A lowercase snake_case id for an EnvScaler env_id, unique among `taken`."""
    base = re.sub(r"[^a-z0-9_]+", "_", env_id.lower()).strip("_") or "env"
    if not base[0].isalpha():
        base = f"env_{base}"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


def _entities(item: dict[str, Any], source: str) -> list[Entity]:
    """Entities from state_space_definition, with attribute types from a matching TypedDict when found."""
    typeddicts = collect_module_types(parse_module(source)).typeddicts
    entities = []
    for spec in item.get("state_space_definition") or []:
        name = str(spec.get("entity", ""))
        td = next(
            (typeddicts[n] for n in (name, f"{name}Info", f"{name}Record", f"{name}Data") if n in typeddicts),
            None,
        )
        attrs = []
        for raw in str(spec.get("attributes") or "").split(","):
            attr = raw.strip()
            if attr:
                ann = td.fields.get(attr) if td else None
                attrs.append(Attribute(name=attr, type=annotation_text(ann) if ann is not None else ""))
        entities.append(Entity(name=name, attributes=attrs, description=str(spec.get("description") or "")))
    return entities


def _line_number(problem: str) -> int:
    found = re.match(r"line (\d+)", problem)
    return int(found.group(1)) if found else 10**9


def _kept(original: dict[str, Any], derived: dict[str, Any], always: tuple[str, ...]) -> dict[str, Any]:
    kept = {k: v for k, v in original.items() if k in always or k not in derived or derived[k] != v}
    return {EXTRA_KEY: kept, ORDER_KEY: list(original)}


def env_from_item(
    env_id: str,
    item: dict[str, Any],
    our_id: str,
    default_state: State,
    *,
    skip_checks: bool = False,
) -> EnvSkeleton:
    """One EnvScaler env item -> EnvSkeleton; raises EnvironmentCodeError when the code is unusable."""
    return with_default_state(env_without_state(env_id, item, our_id, skip_checks=skip_checks), default_state)


def with_default_state(skeleton: EnvSkeleton, default_state: State) -> EnvSkeleton:
    """`skeleton` with its default state (the first scenario's init_config), noted when it does not fit."""
    notes = list(skeleton.provenance.notes)
    state_problems = validate_state(skeleton, default_state, where="default_state")
    if state_problems:
        notes.append("default state (first scenario's init_config) does not fit the state "
                     "schema: " + "; ".join(state_problems[:3]))
    provenance = skeleton.provenance.model_copy(update={"notes": notes})
    return skeleton.model_copy(update={"default_state": default_state, "provenance": provenance})


def env_without_state(env_id: str, item: dict[str, Any], our_id: str, *, skip_checks: bool = False,
                      convention: ConventionChoice = "auto", contained: bool = False) -> EnvSkeleton:
    """One EnvScaler env item -> EnvSkeleton with an empty default state (everything a scenario's conversion
    needs); raises EnvironmentCodeError when the code is unusable. `convention` is how its tools report a failed
    call (_outcome.py); 'auto' guesses it from the code (a `success` key: EnvScaler's, else error-field).
    `contained`: its servers will run under the OS layers, so the static-check problems those contain are
    warnings (notes), not refusals (skeleton/checks.py)."""
    source, class_name = item["env_class_code"], item["env_class_name"]
    notes = []
    if convention == "auto":
        convention = guess_convention(source)
        if convention != DEFAULT_CONVENTION:
            notes.append(f"success convention: {convention} (its code never answers a 'success' key)")
    findings = check_findings(source, class_name)
    problems, warnings = (findings.refusals, findings.warnings) if contained else \
        (sorted(findings.refusals + findings.warnings, key=_line_number), [])
    if problems and not skip_checks:
        what = " (what the OS layers cannot contain)" if contained else ""
        raise EnvironmentCodeError(
            f"failed the static checks{what} (use --skip-checks to import anyway): " + "; ".join(problems)
        )
    notes += [f"static check: {p}" for p in problems]
    notes += [f"static check (warning): {p}" for p in warnings]
    notes += [f"determinism: {p}" for p in check_determinism(source)]
    tools = extract_tools(source, class_name)
    declared = {
        op.get("operation_name"): op.get("operation_type")
        for op in item.get("operation_list") or []
        if isinstance(op, dict)
    }
    for i, tool in enumerate(tools):
        theirs = declared.get(tool.name)
        if theirs in ("query", "state_change") and theirs != tool.kind:
            notes.append(
                f"tool '{tool.name}': EnvScaler says {theirs}, static analysis says {tool.kind}; "
                "using state_change"
            )
            tools[i] = tool.model_copy(update={"kind": "state_change"})
    public = {t.name for t in tools}
    hidden = [t.get("function", {}).get("name") for t in item.get("tools") or [] if isinstance(t, dict)]
    hidden = [n for n in hidden if n and n not in public]
    if hidden:
        notes.append(f"not exposed as tools (private or not methods): {', '.join(hidden)}")
    summary = item.get("environment_summary") or env_id
    state = extract_state(source, class_name)
    skeleton = EnvSkeleton(
        id=our_id,
        name=summary,
        summary=summary,
        introduction=item.get("environment_introduction") or "",
        entities=_entities(item, source),
        rules=list(item.get("constraints_rules") or []),
        class_name=class_name,
        class_source=source,
        state=state,
        tools=tools,
        default_state={},
        free_fields=infer_free_fields(state),
        success_convention=convention,
        provenance=Provenance(source="envscaler-import", source_id=env_id, notes=notes),
    )
    return skeleton.model_copy(update={"extra": _kept(item, derived_env_item(skeleton), ALWAYS_KEPT_ENV)})


def scenario_from_item(item: dict[str, Any], skeleton: EnvSkeleton) -> Scenario:
    """One EnvScaler scenario item -> Scenario (validators from checklist_with_func; None for SFT items)."""
    with_func = item.get("checklist_with_func") or []
    if with_func:
        checklist = [
            ChecklistItem(id=f"c{i}", description=c["check_item"], validator=c["check_func"])
            for i, c in enumerate(with_func, start=1)
        ]
    else:
        checklist = [
            ChecklistItem(id=f"c{i}", description=text, validator=None)
            for i, text in enumerate(item.get("checklist") or [], start=1)
        ]
    notes = []
    problems = validate_state(skeleton, item["init_config"], where="init_config")
    if problems:
        notes.append("init_config does not fit the state schema: " + "; ".join(problems[:3]))
    own = item.get(OWN_KEY)
    if not isinstance(own, dict):
        own = {}
    checklist = _with_own_items(checklist, own)
    answer = own.get("reference_answer")
    task_id = item.get("task_id")
    turns = own.get("turns")
    scenario = Scenario(
        env_id=skeleton.id,
        title=title_from_task(item["task"]),  # EnvScaler's scenarios have none: lists would show only ids
        task=item["task"],
        initial_state=item["init_config"],
        checklist=checklist,
        reference_answer=answer if isinstance(answer, str) else None,
        turns=turns if isinstance(turns, list) else [],
        provenance=Provenance(
            source="envscaler-import", source_id=None if task_id is None else str(task_id), notes=notes
        ),
    ).with_id()
    return scenario.model_copy(
        update={"extra": _kept(item, derived_scenario_item(scenario, skeleton), ALWAYS_KEPT_SCENARIO)}
    )


def _with_own_items(state_items: list[ChecklistItem], own: dict[str, Any]) -> list[ChecklistItem]:
    """Restore what an export saved under OWN_KEY: the state items' ids and flags, and the transcript items at
    their places. Without saved ids, items are numbered c1, c2, ... by position (as native scenarios are)."""
    flags = own.get("state_items")
    if isinstance(flags, list) and len(flags) == len(state_items) and all(isinstance(f, dict) for f in flags):
        state_items = [c.model_copy(update={"id": str(f.get("id") or c.id),
                                            "claims_change": bool(f.get("claims_change", True))})
                       for c, f in zip(state_items, flags, strict=True)]
        numbered = False
    else:
        numbered = True
    saved = own.get("transcript_checks")
    entries = sorted((e for e in saved if isinstance(e, dict)), key=lambda e: int(e.get("position", 0))
                     ) if isinstance(saved, list) else []
    merged = list(state_items)
    for entry in entries:
        merged.insert(min(max(int(entry.get("position", len(merged))), 0), len(merged)), ChecklistItem(
            id=str(entry.get("id") or ""), description=str(entry.get("check_item", "")),
            validator=entry.get("check_func"), kind="transcript",
            claims_change=bool(entry.get("claims_change", True))))
    merged = [c.model_copy(update={"id": f"c{n}"}) if (numbered and c.kind == "state") or not c.id else c
              for n, c in enumerate(merged, start=1)]
    if len({c.id for c in merged}) < len(merged):  # saved ids that clash (a hand-edited file): number them all
        merged = [c.model_copy(update={"id": f"c{n}"}) for n, c in enumerate(merged, start=1)]
    return merged


@dataclass
class PreparedEnvs:
    """The env items of an import, converted without their default states, and the ones that failed."""

    skeletons: MutableMapping[str, EnvSkeleton]  # EnvScaler env_id -> skeleton (empty default state)
    failed: dict[str, tuple[str, str]]  # EnvScaler env_id -> (why, in short; its error line)


def prepare_envs(envs_path: Path, *, skip_checks: bool = False, convention: ConventionChoice = "auto",
                 contained: bool = False, into: MutableMapping[str, EnvSkeleton] | None = None) -> PreparedEnvs:
    """Read and convert an env metadata file (ids made unique in file order); raises InputFileError. The
    skeletons go into `into` (a dict when None; stream_import's EnvSpool keeps them on disk)."""
    prepared = PreparedEnvs({} if into is None else into, {})
    taken: set[str] = set()
    for position, (env_id, item) in enumerate(iter_env_metadata(Path(envs_path))):
        our_id = our_env_id(env_id, taken)
        try:
            skeleton = env_without_state(env_id, item, our_id, skip_checks=skip_checks, convention=convention,
                                         contained=contained)
        except EnvironmentCodeError as exc:
            why = "failed the static checks" if str(exc).startswith("failed the static checks") else \
                "code the extractor cannot use"
            prepared.failed[env_id] = (why, f"{envs_path}: env '{env_id}': {exc}")
            continue
        taken.add(our_id)
        skeleton.extra[POSITION_KEY] = position
        prepared.skeletons[env_id] = skeleton
    return prepared


def import_skips(prepared: PreparedEnvs, skipped: dict[str, list[int]], envs_path: Path,
                 scenarios_path: Path | None) -> list[Skipped]:
    """One record per failed environment (its scenarios counted with it, one line however many) and per env_id
    of scenarios that is not in the env file. `skipped`: env_id -> positions of its scenarios that were not
    imported."""
    skips = []
    skipped = dict(skipped)
    for env_id, (why, error) in prepared.failed.items():
        lost = len(skipped.pop(env_id, []))
        line = error + (f"; its {lost} scenario(s) were skipped" if lost else "")
        skips.append(Skipped("environment", why, line))
        if lost:
            skips.append(Skipped("scenario", "their environment was skipped", line, count=lost))
    for env_id, positions in skipped.items():
        first = ", ".join(f"#{i}" for i in positions[:3]) + (" ..." if len(positions) > 3 else "")
        skips.append(Skipped("scenario", "env_id not in the env file",
                             f"{scenarios_path}: env '{env_id}' is not in {envs_path}, so its {len(positions)} "
                             f"scenario(s) ({first}) were skipped", count=len(positions)))
    return skips


def error_lines(skips: list[Skipped]) -> list[str]:
    """The distinct lines of `skips`, in order (an environment and its scenarios share one line)."""
    return list(dict.fromkeys(s.line for s in skips))


def import_envscaler(
    envs_path: Path, scenarios_path: Path | None = None, *, skip_checks: bool = False
) -> ImportResult:
    """Read EnvScaler files and convert them, all in memory (stream_import writes to a folder while reading).
    Problems with one env or scenario are collected, not raised; file-level problems (bad JSON, a missing
    field) raise InputFileError."""
    prepared = prepare_envs(envs_path, skip_checks=skip_checks)
    scenario_items = read_scenario_metadata(Path(scenarios_path)) if scenarios_path else []
    result = ImportResult()
    first_state: dict[str, dict[str, Any]] = {}
    for s in scenario_items:
        first_state.setdefault(s["env_id"], s["init_config"])
    by_env = {env_id: with_default_state(skeleton, first_state.get(env_id, {}))
              for env_id, skeleton in prepared.skeletons.items()}
    result.skeletons = list(by_env.values())
    routing = Routing()
    for owner, _, scenario in converted_scenarios(enumerate(scenario_items), by_env, routing):
        result.scenarios.setdefault(owner.id, []).append(scenario)
    result.duplicates = routing.duplicates
    result.skipped = import_skips(prepared, routing.skipped, envs_path, scenarios_path)
    result.errors = error_lines(result.skipped)
    return result


@dataclass
class Routing:
    """What converted_scenarios left out: positions of items by unknown env_id, and duplicates."""

    skipped: dict[str, list[int]] = field(default_factory=dict)
    duplicates: int = 0


def converted_scenarios(items: Iterable[tuple[int, dict[str, Any]]], owners: Mapping[str, EnvSkeleton],
                        routing: Routing) -> Iterator[tuple[EnvSkeleton, dict[str, Any], Scenario]]:
    """(owner skeleton, item, scenario) for each (position, item) in order, converted one at a time; items of
    an env_id not in `owners` and scenarios identical to an earlier one are left out and noted in `routing`.
    The first item yielded for an env is the first item of that env_id."""
    seen_ids: set[str] = set()
    for i, item in items:
        owner = owners.get(item["env_id"])
        if owner is None:
            routing.skipped.setdefault(item["env_id"], []).append(i)
            continue
        scenario = scenario_from_item(item, owner)
        if scenario.id in seen_ids:
            routing.duplicates += 1
            continue
        seen_ids.add(scenario.id)
        scenario.extra[POSITION_KEY] = i
        yield owner, item, scenario
