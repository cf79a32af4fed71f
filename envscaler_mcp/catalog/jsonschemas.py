"""JSON Schemas of the on-disk formats, generated from the Pydantic models into schemas/.

    python -m envscaler_mcp.catalog.jsonschemas [--check]      (or: envscaler-mcp catalog schemas)

To publish a new format, add its model to `schema_models()`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pydantic import BaseModel

from envscaler_mcp._io import atomic_write_text
from envscaler_mcp.catalog.paths import package_root
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.build import EnvMeta
from envscaler_mcp.skeleton.models import EnvSkeleton

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_models() -> dict[str, type[BaseModel]]:
    """File name (without .schema.json) -> model, for every published on-disk format."""
    return {"env_skeleton": EnvSkeleton, "scenario": Scenario, "env_meta": EnvMeta}


def schema_text(model: type[BaseModel]) -> str:
    """The schema file's exact text (deterministic)."""
    schema = {"$schema": SCHEMA_DIALECT, **model.model_json_schema(mode="validation")}
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def default_dir() -> Path:
    """schemas/ at the package root (the repository root in a checkout)."""
    return package_root() / "schemas"


def write_schemas(out_dir: Path | None = None, *, check: bool = False) -> list[str]:
    """Write every schema file (only when changed); with check, write nothing.

    Returns the names of files that were stale (with check) or rewritten (without).
    """
    out_dir = Path(out_dir) if out_dir else default_dir()
    changed = []
    for name, model in schema_models().items():
        path = out_dir / f"{name}.schema.json"
        text = schema_text(model)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        changed.append(path.name)
        if not check:
            atomic_write_text(path, text)
    return changed


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: write schemas/ or, with --check, exit 1 when any file is stale."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    changed = write_schemas(check=check)
    verb = "stale" if check else "written"
    for name in changed:
        print(f"{name}: {verb}")
    if check and changed:
        print("run `python -m envscaler_mcp.catalog.jsonschemas` and commit schemas/", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
