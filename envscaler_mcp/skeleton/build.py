"""Build an EnvSkeleton from an authoring folder (environment.py, meta.json, default_state.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from envscaler_mcp._io import read_json, validate_model
from envscaler_mcp._json import State
from envscaler_mcp._outcome import DEFAULT_CONVENTION, SuccessConvention
from envscaler_mcp.errors import EnvironmentCodeError, InputFileError
from envscaler_mcp.skeleton.checks import check_determinism, check_source, check_state_jsonable
from envscaler_mcp.skeleton.free_fields import infer_free_fields
from envscaler_mcp.skeleton.models import Entity, EnvSkeleton, FreeField, Provenance, QualityReport, ToolKind
from envscaler_mcp.skeleton.quick_check import compile_check
from envscaler_mcp.skeleton.schema import extract_state, extract_tools, state_schema

SOURCE_FILE = "environment.py"
META_FILE = "meta.json"
DEFAULT_STATE_FILE = "default_state.json"


class EnvMeta(BaseModel):
    """meta.json of an authoring folder: everything about an environment that is not code or state."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Environment id (lowercase snake_case).")
    name: str = Field(description="Human-readable name.")
    summary: str = Field(description="One-line summary.")
    introduction: str = Field(description="About three sentences introducing the environment.")
    class_name: str = Field(description="Name of the environment class in environment.py.")
    entities: list[Entity] = Field(default_factory=list, description="Entities and their attributes.")
    rules: list[str] = Field(default_factory=list, description="Business rules the code enforces.")
    tool_kinds: dict[str, ToolKind] = Field(
        default_factory=dict, description="Overrides of the statically derived tool kinds, by tool name."
    )
    free_fields: list[FreeField] | None = Field(
        None,
        description="State paths the state check lets differ from the reference solution (free text, generated "
        "timestamps), each with its reason; omitted: inferred from field names and types "
        "(skeleton.free_fields).",
    )
    success_convention: SuccessConvention = Field(
        DEFAULT_CONVENTION, description="How a tool reports a failed call: 'envscaler', 'error-field' or 'no-error' "
        "(skeleton.success_convention).")
    quality: QualityReport | None = Field(None, description="How the environment's quality was assessed.")
    notes: list[str] = Field(default_factory=list, description="Provenance notes.")
    provenance: Provenance | None = Field(
        None, description="Where the environment came from (synthesized: models per seat, prompt version, usage); "
        "omitted: hand-authored, with `notes`.")


def skeleton_json(skeleton: EnvSkeleton) -> str:
    """The canonical on-disk text of a skeleton.json (deterministic: same skeleton, same bytes)."""
    return json.dumps(skeleton.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def validate_state(skeleton: EnvSkeleton, state: Any, *, where: str = "state") -> list[str]:
    """Problems of `state` as an initial state of `skeleton` (JSON-ness, then the state schema)."""
    schema = state_schema(skeleton)
    quick = compile_check(schema)
    if quick is not None and isinstance(state, dict) and quick(state):  # the common case, ~20x faster
        return []
    problems = [f"{where}: {p}" for p in check_state_jsonable(state)]
    if problems:
        return problems
    validator = jsonschema.Draft202012Validator(schema)
    for err in sorted(validator.iter_errors(state), key=lambda e: list(e.absolute_path))[:20]:
        path = "".join(f"[{p!r}]" for p in err.absolute_path)
        problems.append(f"{where}{path}: {err.message}")
    return problems


def build_skeleton(
    meta: EnvMeta,
    source: str,
    default_state: State,
    provenance: Provenance | None = None,
    *,
    strict: bool = True,
) -> EnvSkeleton:
    """Check the source, extract tools and state, apply kind overrides and validate the default state.

    strict also rejects non-deterministic calls and requires the default state to set every attribute.
    Raises EnvironmentCodeError listing every problem found.
    """
    problems = check_source(source, meta.class_name)
    if strict:
        problems += check_determinism(source)
    if problems:
        raise EnvironmentCodeError(
            f"environment '{meta.id}' failed the static checks:\n  - " + "\n  - ".join(problems)
        )
    tools = extract_tools(source, meta.class_name)
    names = [t.name for t in tools]
    unknown = sorted(set(meta.tool_kinds) - set(names))
    if unknown:
        raise EnvironmentCodeError(
            f"environment '{meta.id}': tool_kinds names unknown tool(s) {unknown}; the tools are {names}."
        )
    tools = [t.model_copy(update={"kind": meta.tool_kinds.get(t.name, t.kind)}) for t in tools]
    state = extract_state(source, meta.class_name)
    skeleton = EnvSkeleton(
        id=meta.id,
        name=meta.name,
        summary=meta.summary,
        introduction=meta.introduction,
        entities=meta.entities,
        rules=meta.rules,
        class_name=meta.class_name,
        class_source=source,
        state=state,
        tools=tools,
        default_state=default_state,
        free_fields=meta.free_fields if meta.free_fields is not None else infer_free_fields(state),
        success_convention=meta.success_convention,
        provenance=provenance or meta.provenance or Provenance(source="hand-authored", notes=meta.notes),
        quality=meta.quality,
    )
    state_problems = validate_state(skeleton, default_state, where="default_state")
    missing = [a.name for a in skeleton.state if a.name not in default_state]
    if strict and missing:
        state_problems.append(
            f"default_state: missing state attribute(s) {missing}; give each a value "
            "(an empty {} or [] is fine)."
        )
    if state_problems:
        raise EnvironmentCodeError(
            f"environment '{meta.id}': the default state does not fit the state schema:"
            "\n  - " + "\n  - ".join(state_problems)
        )
    return skeleton


def build_skeleton_from_dir(folder: Path) -> EnvSkeleton:
    """Build the skeleton of an authoring folder (environments/<env>/), running every check."""
    folder = Path(folder)
    source_path = folder / SOURCE_FILE
    if not source_path.is_file():
        raise InputFileError(
            source_path,
            "file not found",
            f"an authoring folder holds {SOURCE_FILE}, {META_FILE} and {DEFAULT_STATE_FILE}.",
        )
    meta = validate_model(EnvMeta, read_json(folder / META_FILE), path=folder / META_FILE)
    if meta.id != folder.name:
        raise InputFileError(
            folder / META_FILE,
            f"id '{meta.id}' differs from the folder name '{folder.name}'",
            "rename the folder or fix the id; they must match.",
        )
    state_path = folder / DEFAULT_STATE_FILE
    default_state = read_json(state_path) if state_path.exists() else {}
    if not isinstance(default_state, dict):
        raise InputFileError(state_path, "expected a JSON object keyed by state attribute name")
    return build_skeleton(meta, source_path.read_text(encoding="utf-8"), default_state)


def authoring_dirs(root: Path, env_ids: list[str] | None = None) -> list[Path]:
    """Authoring folders under `root` (those with an environment.py), optionally only the given ones.

    Each of env_ids is an id under `root` or a path to an authoring folder.
    """
    root = Path(root)
    if env_ids:
        folders = [Path(e) if (Path(e) / SOURCE_FILE).is_file() else root / e for e in env_ids]
        for f in folders:
            if not (f / SOURCE_FILE).is_file():
                raise InputFileError(f, f"no {SOURCE_FILE} here; is '{f.name}' an environment of {root}?")
        return folders
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / SOURCE_FILE).is_file())


def authoring_files(skeleton: EnvSkeleton) -> dict[str, str]:
    """The authoring folder of a skeleton (synthesized or imported), from which `build_skeleton_from_dir` builds
    the same skeleton: environment.py, meta.json (provenance and quality kept) and default_state.json."""
    derived = {t.name: t.kind for t in extract_tools(skeleton.class_source, skeleton.class_name)}
    meta = EnvMeta(id=skeleton.id, name=skeleton.name, summary=skeleton.summary, introduction=skeleton.introduction,
                   class_name=skeleton.class_name, entities=skeleton.entities, rules=skeleton.rules,
                   tool_kinds={t.name: t.kind for t in skeleton.tools if derived.get(t.name) != t.kind},
                   free_fields=skeleton.free_fields, quality=skeleton.quality, provenance=skeleton.provenance,
                   success_convention=skeleton.success_convention)
    return {SOURCE_FILE: skeleton.class_source,
            META_FILE: json.dumps(meta.model_dump(mode="json", exclude_defaults=True), indent=2,
                                  ensure_ascii=False) + "\n",
            DEFAULT_STATE_FILE: json.dumps(skeleton.default_state, indent=1, ensure_ascii=False) + "\n"}


def build_folder(folder: Path, *, check: bool = False) -> str:
    """Build one folder's skeleton.json; return 'unchanged', 'written', or with check, 'stale' / 'missing'.

    The file is rewritten atomically, and only when its bytes would change.
    """
    from envscaler_mcp._io import atomic_write_text

    text = skeleton_json(build_skeleton_from_dir(folder))
    target = Path(folder) / "skeleton.json"
    current = target.read_text(encoding="utf-8") if target.exists() else None
    if current == text:
        return "unchanged"
    if check:
        return "stale" if current is not None else "missing"
    atomic_write_text(target, text)
    return "written"
