"""schemas/ is generated from the models: fail on drift, and the schemas accept the fixture files."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from envscaler_mcp.catalog.jsonschemas import schema_models, schema_text, write_schemas

ROOT = Path(__file__).resolve().parents[2]
MINI_SHOP = ROOT / "tests" / "fixtures" / "mini_shop"


def test_schema_files_match_the_models() -> None:
    for name, model in schema_models().items():
        path = ROOT / "schemas" / f"{name}.schema.json"
        assert path.exists(), f"{path} missing: run `envscaler-mcp catalog schemas`"
        assert path.read_text(encoding="utf-8") == schema_text(model), (
            f"{path.name} is stale: run `envscaler-mcp catalog schemas` and commit schemas/"
        )


def test_write_schemas_reports_stale_files(tmp_path: Path) -> None:
    assert sorted(write_schemas(tmp_path, check=True)) == sorted(f"{n}.schema.json" for n in schema_models())
    assert list(tmp_path.iterdir()) == []
    assert len(write_schemas(tmp_path)) == len(schema_models())
    assert write_schemas(tmp_path, check=True) == []


def _validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_fixture_files_validate_against_the_schemas() -> None:
    _validator("env_skeleton").validate(json.loads((MINI_SHOP / "skeleton.json").read_text()))
    _validator("env_meta").validate(json.loads((MINI_SHOP / "meta.json").read_text()))
    scenario = _validator("scenario")
    for line in (MINI_SHOP / "scenarios.jsonl").read_text().splitlines():
        scenario.validate(json.loads(line))
    bad = json.loads((MINI_SHOP / "skeleton.json").read_text())
    bad["surprise"] = 1
    assert not _validator("env_skeleton").is_valid(bad)
