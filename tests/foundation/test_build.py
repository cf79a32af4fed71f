"""Building skeletons from authoring folders, the mini_shop fixture, and the catalog CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.cli import app
from envscaler_mcp.errors import EnvironmentCodeError, InputFileError
from envscaler_mcp.skeleton.build import build_skeleton_from_dir, skeleton_json, validate_state
from tests.foundation._inprocess import new_instance, run_validator, state_of

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"


@pytest.fixture
def shop_copy(tmp_path: Path) -> Path:
    target = tmp_path / "environments" / "mini_shop"
    shutil.copytree(MINI_SHOP, target)
    return target


def test_fixture_skeleton_is_current() -> None:
    built = build_skeleton_from_dir(MINI_SHOP)
    assert skeleton_json(built) == (MINI_SHOP / "skeleton.json").read_text(encoding="utf-8")
    assert [(t.name, t.kind) for t in built.tools] == [
        ("get_order", "query"),
        ("list_orders", "query"),
        ("cancel_order", "state_change"),
        ("add_note", "state_change"),
    ]
    assert built.class_source == (MINI_SHOP / "environment.py").read_text(encoding="utf-8")


def test_fixture_scenarios_are_current_and_solved_by_their_reference() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_scenarios", MINI_SHOP / "make_scenarios.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    skeleton = load_skeleton(MINI_SHOP)
    scenarios = load_scenarios(MINI_SHOP / "scenarios.jsonl")
    assert [s.model_dump() for s in scenarios] == [s.model_dump() for s in module.build()]
    for scenario in scenarios:
        assert scenario.id == scenario.compute_id()
        assert validate_state(skeleton, scenario.initial_state) == []
        env = new_instance(skeleton, scenario.initial_state)
        for call in scenario.reference_solution:
            result = getattr(env, call.tool)(**call.arguments)
            assert result["success"] is True, (call, result)
        final = state_of(env, skeleton)
        for item in scenario.checklist:
            assert item.validator is not None
            assert run_validator(item.validator, scenario.initial_state, final) is True, item.id
            before = run_validator(item.validator, scenario.initial_state, scenario.initial_state)
            assert before is (not item.claims_change), item.id


def test_default_state_must_fit_the_schema(shop_copy: Path) -> None:
    state = json.loads((shop_copy / "default_state.json").read_text())
    state["orders"]["O-1001"]["status"] = "lost"
    state["orders"]["O-1002"]["total"] = "12"
    (shop_copy / "default_state.json").write_text(json.dumps(state))
    with pytest.raises(EnvironmentCodeError) as info:
        build_skeleton_from_dir(shop_copy)
    msg = str(info.value)
    assert "['orders']['O-1001']['status']" in msg and "'lost' is not one of" in msg
    assert "['orders']['O-1002']['total']" in msg


def test_default_state_must_set_every_attribute_and_no_unknown_ones(shop_copy: Path) -> None:
    (shop_copy / "default_state.json").write_text('{"order": {}}')
    with pytest.raises(EnvironmentCodeError) as info:
        build_skeleton_from_dir(shop_copy)
    assert "'order' was unexpected" in str(info.value) and "missing state attribute(s) ['orders']" in str(
        info.value
    )


def test_static_check_failures_are_listed(shop_copy: Path) -> None:
    src = (shop_copy / "environment.py").read_text()
    src = src.replace("from typing import", "import os\nimport datetime\nfrom typing import")
    src = src.replace(
        '        order["status"] = "cancelled"', '        order["status"] = str(datetime.date.today())'
    )
    (shop_copy / "environment.py").write_text(src)
    with pytest.raises(EnvironmentCodeError) as info:
        build_skeleton_from_dir(shop_copy)
    assert "import of 'os'" in str(info.value) and "date.today()" in str(info.value)


def test_meta_problems(shop_copy: Path) -> None:
    meta = json.loads((shop_copy / "meta.json").read_text())
    (shop_copy / "meta.json").write_text(json.dumps({**meta, "tool_kinds": {"nope": "query"}}))
    with pytest.raises(EnvironmentCodeError, match="unknown tool"):
        build_skeleton_from_dir(shop_copy)
    (shop_copy / "meta.json").write_text(json.dumps({**meta, "tool_kinds": {"add_note": "query"}}))
    assert build_skeleton_from_dir(shop_copy).tool("add_note").kind == "query"
    (shop_copy / "meta.json").write_text(json.dumps({**meta, "id": "other"}))
    with pytest.raises(InputFileError, match="differs from the folder name"):
        build_skeleton_from_dir(shop_copy)
    (shop_copy / "meta.json").write_text(json.dumps({**meta, "colour": "red"}))
    with pytest.raises(InputFileError, match="colour"):
        build_skeleton_from_dir(shop_copy)


def test_catalog_build_check_list_and_show(shop_copy: Path) -> None:
    home = shop_copy.parent.parent
    runner = CliRunner()
    (shop_copy / "skeleton.json").unlink()
    result = runner.invoke(app, ["catalog", "build", "--home", str(home), "--check"])
    assert result.exit_code == 1 and "mini_shop: missing" in result.output
    result = runner.invoke(app, ["catalog", "build", "--home", str(home)])
    assert result.exit_code == 0 and "mini_shop: written" in result.output
    assert (shop_copy / "skeleton.json").read_bytes() == (MINI_SHOP / "skeleton.json").read_bytes()
    result = runner.invoke(app, ["catalog", "build", "--home", str(home), "--check"])
    assert result.exit_code == 0 and "mini_shop: unchanged" in result.output

    (home / "scenarios").mkdir()
    shutil.copy(MINI_SHOP / "scenarios.jsonl", home / "scenarios" / "mini_shop.jsonl")
    result = runner.invoke(app, ["list", "--home", str(home)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    row = next(line for line in result.output.splitlines() if "mini_shop" in line)
    assert row.split() == ["mini_shop", "Mini", "Shop", "4", "2", "2", "hand-authored"]  # tools, queries, scenarios
    result = runner.invoke(app, ["show", "mini_shop", "--home", str(home)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for text in (
        "Only pending orders can be cancelled.",
        "cancel_order",
        "state_change",
        "reason?: string",
        "Cancel all of Alice's pending orders",
    ):
        assert text in result.output


def test_list_origin_names_the_generator_of_synthesized_environments() -> None:
    from envscaler_mcp.catalog.listing import origin_text
    from envscaler_mcp.skeleton.models import Provenance

    assert origin_text(Provenance(source="hand-authored")) == "hand-authored"
    synthesized = Provenance(source="synthesized", models={"generator": "local/qwen2.5-coder-1.5b"})
    assert origin_text(synthesized) == "synthesized (local/qwen2.5-coder-1.5b)"
