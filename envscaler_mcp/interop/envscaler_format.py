"""Reading EnvScaler's metadata files, with errors that name the file, the item and the field.

Env metadata (`*_env_metadata.json`): an object keyed by env_id (or a list) of items with
env_id, environment_summary, environment_introduction, state_space_definition, constraints_rules,
operation_list, env_class_name, env_class_code, env_class_def, env_structure, tools.
Scenario metadata (`*_scenario_metadata.json`): a list of items with env_id, env_class_name, task_id,
init_config, task and, for RL scenarios, checklist and checklist_with_func.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from envscaler_mcp._io import read_json
from envscaler_mcp.errors import InputFileError

ENV_FIELDS = (
    "env_id",
    "environment_summary",
    "environment_introduction",
    "state_space_definition",
    "constraints_rules",
    "operation_list",
    "env_class_name",
    "env_class_code",
    "env_class_def",
    "env_structure",
    "tools",
)
SCENARIO_FIELDS = (
    "env_id",
    "env_class_name",
    "task_id",
    "init_config",
    "task",
    "checklist",
    "checklist_with_func",
)

# field -> (JSON type name for messages, accepted Python types)
_ENV_TYPES: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "env_id": ("a string", str),
    "environment_summary": ("a string", str),
    "environment_introduction": ("a string", str),
    "state_space_definition": ("a list", list),
    "constraints_rules": ("a list of strings", list),
    "operation_list": ("a list", list),
    "env_class_name": ("a string", str),
    "env_class_code": ("a string", str),
    "env_class_def": ("a string", str),
    "env_structure": ("an object", dict),
    "tools": ("a list", list),
}
_ENV_REQUIRED = ("env_class_name", "env_class_code")
_SCENARIO_TYPES: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "env_id": ("a string", str),
    "env_class_name": ("a string", str),
    "task_id": ("a string", (str, int)),
    "init_config": ("an object", dict),
    "task": ("a string", str),
    "checklist": ("a list of strings", list),
    "checklist_with_func": ("a list of {check_item, check_func} objects", list),
}
_SCENARIO_REQUIRED = ("env_id", "task", "init_config")


def _check_fields(
    path: Path, label: str, item: Any, types: dict[str, tuple[str, Any]], required: tuple[str, ...]
) -> None:
    if not isinstance(item, dict):
        raise InputFileError(path, f"{label}: expected an object, got {type(item).__name__}")
    for name in required:
        if name not in item:
            raise InputFileError(
                path,
                f"{label}: field '{name}' missing",
                f"every item needs {', '.join(repr(r) for r in required)}.",
            )
    for name, (expected, py_type) in types.items():
        if name in item and item[name] is not None and not isinstance(item[name], py_type):
            raise InputFileError(
                path, f"{label}: field '{name}' must be {expected}, got {type(item[name]).__name__}"
            )


def read_env_metadata(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(env_id, item) pairs of an env metadata file, in file order, with every item's fields checked."""
    return list(iter_env_metadata(path))


def iter_env_metadata(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(env_id, item) pairs of an env metadata file, in file order, read and checked one item at a time: memory
    holds one environment, not the file. A problem raises InputFileError once reached."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "file not found")
    with path.open("rb") as f:
        first = _first_byte(f)
        if first not in (b"{", b"["):  # not a container: read_json says whether it is JSON at all
            kind = "nothing" if first == b"" else type(read_json(path)).__name__
            raise InputFileError(path, f"expected an object keyed by env_id (or a list), got {kind}")
        pairs: Iterator[tuple[str, Any]] = ijson.kvitems(f, "", use_float=True) if first == b"{" else (
            (str(item.get("env_id", f"#{i}")) if isinstance(item, dict) else f"#{i}", item)
            for i, item in enumerate(ijson.items(f, "item", use_float=True)))
        seen: set[str] = set()
        last = None
        try:
            for key, item in pairs:
                yield _checked_env(path, str(key), item, seen)
                last = key
        except ijson.JSONError as exc:
            where = f"after env '{last}'" if last is not None else "before the first env"
            raise InputFileError(path, f"not valid JSON {where}: {str(exc).splitlines()[0]}") from exc


def _checked_env(path: Path, key: str, item: Any, seen: set[str]) -> tuple[str, dict[str, Any]]:
    """(env_id, item) of the env item under `key`, its fields checked; its env_id added to `seen`."""
    label = f"env '{key}'"
    _check_fields(path, label, item, _ENV_TYPES, _ENV_REQUIRED)
    env_id = item.get("env_id", key)
    if env_id in seen:
        raise InputFileError(path, f"{label}: env_id '{env_id}' appears twice", "env ids must be unique.")
    seen.add(env_id)
    rules = item.get("constraints_rules") or []
    if not all(isinstance(r, str) for r in rules):
        raise InputFileError(path, f"{label}: field 'constraints_rules' must be a list of strings")
    for i, entity in enumerate(item.get("state_space_definition") or []):
        if not isinstance(entity, dict) or not isinstance(entity.get("entity"), str):
            raise InputFileError(
                path,
                f"{label}: field 'state_space_definition[{i}]' must be an object "
                "with 'entity', 'attributes' and 'description'",
            )
    return env_id, item


def read_scenario_metadata(path: Path) -> list[dict[str, Any]]:
    """The items of a scenario metadata file (a JSON list), each checked."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise InputFileError(path, f"expected a list of scenario items, got {type(data).__name__}")
    for i, item in enumerate(data):
        check_scenario_item(path, i, item)
    return data


def iter_scenario_metadata(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(position, item) of a scenario metadata file, read and checked one item at a time: memory holds one
    item, not the file. A syntax error raises InputFileError once reached (items before it were yielded)."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(path, "file not found")
    with path.open("rb") as f:
        first = _first_byte(f)
        if first != b"[":
            kind = {b"{": "dict", b"": "nothing"}.get(first, "something else")
            raise InputFileError(path, f"expected a list of scenario items, got {kind}")
        i = -1
        try:
            for i, item in enumerate(ijson.items(f, "item", use_float=True)):
                check_scenario_item(path, i, item)
                yield i, item
        except ijson.JSONError as exc:
            where = f"after scenario #{i}" if i >= 0 else "before the first scenario"
            raise InputFileError(path, f"not valid JSON {where}: {str(exc).splitlines()[0]}") from exc


def _first_byte(f: BinaryIO) -> bytes:
    """The first byte of `f` that is not white space (b"" at the end); `f` is left at the start."""
    while chunk := f.read(4096):
        stripped = chunk.lstrip()
        if stripped:
            f.seek(0)
            return stripped[:1]
    f.seek(0)
    return b""


def check_scenario_item(path: Path, i: int, item: Any) -> None:
    """Raise InputFileError naming the item and field when scenario item #i is not a usable scenario item."""
    label = f"scenario #{i}" + (
        f" (task_id {item.get('task_id')})" if isinstance(item, dict) and "task_id" in item else ""
    )
    _check_fields(path, label, item, _SCENARIO_TYPES, _SCENARIO_REQUIRED)
    if not all(isinstance(c, str) for c in item.get("checklist") or []):
        raise InputFileError(path, f"{label}: field 'checklist' must be a list of strings")
    for j, check in enumerate(item.get("checklist_with_func") or []):
        if not (
            isinstance(check, dict)
            and isinstance(check.get("check_item"), str)
            and isinstance(check.get("check_func"), str)
        ):
            raise InputFileError(
                path,
                f"{label}: field 'checklist_with_func[{j}]' must be an object with "
                "string fields 'check_item' and 'check_func'",
            )
