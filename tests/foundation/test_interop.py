"""EnvScaler import/export, on hand-written fixture files in EnvScaler's formats (tests/fixtures/envscaler/)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.cli import app
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.interop.from_envscaler import import_envscaler
from envscaler_mcp.interop.to_envscaler import derived_env_item, export_envscaler
from tests.foundation._cli import os_layers
from tests.foundation._inprocess import new_instance, run_validator, state_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ES = FIXTURES / "envscaler"
ENVS, SCENARIOS, BAD = ES / "env_metadata.json", ES / "scenario_metadata.json", ES / "env_metadata_bad.json"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    result = CliRunner().invoke(
        app,
        [
            "import",
            "envscaler",
            "--envs",
            str(ENVS),
            "--scenarios",
            str(SCENARIOS),
            "--out",
            str(tmp_path / "data"),
        ],
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "data"


def test_round_trip_reproduces_every_field_and_key_order(imported: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["export", "envscaler", "--home", str(imported), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    original_envs, exported_envs = _load(ENVS), _load(tmp_path / "out" / "env_metadata.json")
    assert exported_envs == original_envs
    assert list(exported_envs) == list(original_envs)
    for env_id, item in original_envs.items():
        assert list(exported_envs[env_id]) == list(item)
    original_scen, exported_scen = _load(SCENARIOS), _load(tmp_path / "out" / "scenario_metadata.json")
    assert exported_scen == original_scen
    assert [list(s) for s in exported_scen] == [list(s) for s in original_scen]


def test_imported_skeletons(imported: Path) -> None:
    library = load_skeleton(imported / "environments" / "env_1")
    assert library.provenance.source == "envscaler-import" and library.provenance.source_id == "env_1"
    assert library.class_name == "LibrarySystem" and library.name == "Library lending system"
    assert [(t.name, t.kind) for t in library.tools] == [
        ("get_book", "query"),
        ("search_books", "query"),
        ("borrow_book", "state_change"),
        ("add_fine", "state_change"),
    ]  # _find_book (private) is not a tool
    search = library.tool("search_books").input_schema
    assert search["properties"]["max_results"] == {
        "type": ["integer", "null"],
        "default": None,
        "description": "At most this many results.",
    }
    assert search["required"] == ["keyword"]
    assert [a.name for a in library.state] == ["books", "members", "init_config"]  # init_config stored
    assert library.default_state == _load(SCENARIOS)[0]["init_config"]
    assert [a.type for a in library.entities[0].attributes] == ["str", "str", "int", ""]  # 'borrower' unknown
    kept = library.extra["envscaler"]
    for name in (
        "state_space_definition",
        "operation_list",
        "env_class_def",
        "env_structure",
        "tools",
        "env_class_name",
    ):
        assert kept[name] == _load(ENVS)["env_1"][name]
    assert "_find_book" in " ".join(library.provenance.notes)

    parking = load_skeleton(imported / "environments" / "env_2")  # no-argument __init__, untyped state
    assert [(a.name, a.type, a.json_schema) for a in parking.state] == [
        ("spots", "dict", {}),
        ("tickets", "list", {}),
        ("today", "str", {}),
    ]
    assert parking.extra["envscaler"]["metrics"] == {"usefulness": 8, "modelability": 9}  # unknown key kept
    assert any("datetime.now()" in n for n in parking.provenance.notes)
    assert parking.tool("park").input_schema["properties"]["plate"]["description"] == "Licence plate."


def test_imported_scenarios_and_their_validators(imported: Path) -> None:
    (rl,) = load_scenarios(imported / "scenarios" / "env_1.jsonl")
    assert rl.id == rl.compute_id() and rl.env_id == "env_1"
    assert rl.provenance.source_id == "0923-141502"
    assert [c.description for c in rl.checklist] == ["Has M1 borrowed B1?", "Has Bo's fine increased by 1.5?"]
    assert rl.extra["envscaler"]["source_note"] == "hand-written fixture"
    assert rl.extra["envscaler"]["task_id"] == "0923-141502"
    skeleton = load_skeleton(imported / "environments" / "env_1")
    env = new_instance(skeleton, rl.initial_state)
    assert env.borrow_book(member_id="M1", book_id="B1")["success"] is True
    assert env.add_fine(member_id="M2", amount=1.5)["success"] is True
    with pytest.raises(ValueError):
        env.add_fine(member_id="M2", amount=-1)  # this method raises; servers turn that into a tool error
    final = state_of(env, skeleton)
    for item in rl.checklist:
        assert item.validator is not None
        assert run_validator(item.validator, rl.initial_state, final) is True
        assert (
            run_validator(item.validator, rl.initial_state, rl.initial_state) is False
        )  # reads initial_state

    no_checks, strings_only = load_scenarios(imported / "scenarios" / "env_2.jsonl")
    assert no_checks.checklist == []
    assert [(c.description, c.validator) for c in strings_only.checklist] == [
        ("Has CD-456 been parked in S1?", None)
    ]


def test_bad_environments_are_reported_and_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    os_layers(monkeypatch, on=False)  # every static-check problem refuses
    result = import_envscaler(BAD)
    assert [s.id for s in result.skeletons] == ["env_9"]
    unannotated, forbidden = result.errors
    assert "env 'env_3'" in unannotated and "'Counter'" in unannotated and "'add'" in unannotated
    assert "'amount' has no type annotation" in unannotated
    assert "env 'env_5'" in forbidden and "import of 'os'" in forbidden
    cli = CliRunner().invoke(app, ["import", "envscaler", "--envs", str(BAD), "--out", str(tmp_path)])
    assert cli.exit_code == 0 and (tmp_path / "environments" / "env_9" / "skeleton.json").exists()
    assert "2 environment(s)" not in cli.output and "skipped 2 item(s)" in cli.output
    bad_only = tmp_path / "bad_only.json"
    items = json.loads(BAD.read_text(encoding="utf-8"))
    bad_only.write_text(json.dumps([i for i in items if i["env_id"] != "env_9"]), encoding="utf-8")
    none_left = CliRunner().invoke(app, ["import", "envscaler", "--envs", str(bad_only), "--out", str(tmp_path / "n")])
    assert none_left.exit_code == 1 and "error: nothing usable was imported (no environment)" in none_left.output
    os_layers(monkeypatch, on=True)  # `import os` is contained by the layers: a warning
    contained = CliRunner().invoke(app, ["import", "envscaler", "--envs", str(BAD), "--out", str(tmp_path / "c")])
    assert contained.exit_code == 0 and "env_5 -> env_5" in contained.output
    assert "1 static-check warning(s) (contained by the OS layers):" in contained.output
    lenient = import_envscaler(BAD, skip_checks=True)
    shell = next(s for s in lenient.skeletons if s.id == "env_5")
    assert any("import of 'os'" in n for n in shell.provenance.notes)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            {"env_7": {"env_class_name": "X"}},
            "env_metadata.json: env 'env_7': field 'env_class_code' missing",
        ),
        (
            {"env_7": {"env_class_name": "X", "env_class_code": 3}},
            "field 'env_class_code' must be a string, got int",
        ),
        (
            [{"env_id": "a", "env_class_name": "X", "env_class_code": "", "constraints_rules": [1]}],
            "env 'a': field 'constraints_rules' must be a list of strings",
        ),
        ("not json", "not valid JSON"),
        (5, "expected an object keyed by env_id"),
    ],
)
def test_malformed_env_files_name_file_item_and_field(tmp_path: Path, content: Any, expected: str) -> None:
    path = tmp_path / "env_metadata.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(InputFileError) as info:
        import_envscaler(path)
    assert expected in str(info.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ({"env_id": "env_1"}, "expected a list of scenario items, got dict"),
        ([{"env_id": "env_1", "task": "t"}], "scenario #0: field 'init_config' missing"),
        (
            [{"env_id": "env_1", "task": "t", "init_config": [], "task_id": "x"}],
            "scenario #0 (task_id x): field 'init_config' must be an object",
        ),
        (
            [
                {
                    "env_id": "env_1",
                    "task": "t",
                    "init_config": {},
                    "checklist_with_func": [{"check_item": "a"}],
                }
            ],
            "field 'checklist_with_func[0]' must be an object with string fields 'check_item' and 'check_func'",
        ),
    ],
)
def test_malformed_scenario_files(tmp_path: Path, content: Any, expected: str) -> None:
    path = tmp_path / "scenario_metadata.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputFileError) as info:
        import_envscaler(ENVS, path)
    assert expected in str(info.value)


def test_scenarios_of_unknown_environments_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([{"env_id": "env_404", "task": "t", "init_config": {}}]))
    result = import_envscaler(ENVS, path)
    assert result.scenarios == {} and "env 'env_404' is not in" in result.errors[0]


def test_native_skeleton_exports_every_envscaler_field() -> None:
    skeleton = load_skeleton(FIXTURES / "mini_shop")
    scenarios = load_scenarios(FIXTURES / "mini_shop" / "scenarios.jsonl")
    envs, items = export_envscaler([(skeleton, scenarios)])
    item = envs["mini_shop"]
    assert list(item) == [
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
    ]
    assert item["state_space_definition"] == [
        {
            "entity": "Order",
            "description": "A customer's order.",
            "attributes": "order_id, customer, status, total, notes",
        }
    ]
    ops = {op["operation_name"]: op for op in item["operation_list"]}
    assert ops["cancel_order"]["operation_type"] == "state_change"
    assert ops["cancel_order"]["operation_description"] == "Cancel a pending order."
    for op in item["operation_list"]:
        func = ast.parse(op["code"]).body[0]
        assert isinstance(func, ast.FunctionDef) and func.name == op["operation_name"]
    assert (
        item["env_class_def"]
        .rstrip()
        .endswith("self.orders: Dict[str, OrderInfo] = {}  # orders by order_id")
    )
    assert item["env_structure"]["states"]["orders"]["modified_by"] == ["cancel_order", "add_note"]
    tool = item["tools"][0]
    assert tool["type"] == "function" and tool["function"]["name"] == "get_order"
    assert tool["function"]["parameters"] == skeleton.tools[0].input_schema
    assert [s["task_id"] for s in items] == [s.id for s in scenarios]
    assert items[0]["env_class_name"] == "MiniShop" and items[0]["init_config"] == scenarios[0].initial_state
    assert items[0]["checklist_with_func"][0]["check_func"] == scenarios[0].checklist[0].validator


def test_native_export_reimports_to_the_same_environment(tmp_path: Path) -> None:
    skeleton = load_skeleton(FIXTURES / "mini_shop")
    scenarios = load_scenarios(FIXTURES / "mini_shop" / "scenarios.jsonl")
    envs, items = export_envscaler([(skeleton, scenarios)])
    (tmp_path / "e.json").write_text(json.dumps(envs))
    (tmp_path / "s.json").write_text(json.dumps(items))
    result = import_envscaler(tmp_path / "e.json", tmp_path / "s.json")
    (again,) = result.skeletons
    assert again.tools == skeleton.tools and again.class_source == skeleton.class_source
    assert again.state == skeleton.state and again.rules == skeleton.rules
    assert derived_env_item(again)["operation_list"] == envs["mini_shop"]["operation_list"]
    assert [s.task for s in result.scenarios["mini_shop"]] == [s.task for s in scenarios]
    assert export_envscaler([(again, result.scenarios["mini_shop"])]) == (envs, items)


def test_envscaler_fixture_files_are_current() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixtures", ES / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    assert _load(ENVS) == module.envs()
    assert _load(BAD) == module.bad_envs()
    assert _load(SCENARIOS) == module.scenarios()


def test_round_trip_keeps_file_order_of_environments_and_interleaved_scenarios(tmp_path: Path) -> None:
    base_envs = _load(ENVS)
    envs = {}
    for env_id in ("env_2", "env_10", "env_1"):  # not in sorted order
        envs[env_id] = dict(base_envs["env_2"], env_id=env_id)
    scen = _load(SCENARIOS)[1]
    scenarios = [
        dict(scen, env_id=e, task=f"{scen['task']} ({n})")
        for n, e in enumerate(["env_1", "env_10", "env_1", "env_2", "env_10"])
    ]
    (tmp_path / "e.json").write_text(json.dumps(envs))
    (tmp_path / "s.json").write_text(json.dumps(scenarios))
    runner = CliRunner()
    data, out = tmp_path / "data", tmp_path / "out"
    assert (
        runner.invoke(
            app,
            [
                "import",
                "envscaler",
                "--envs",
                str(tmp_path / "e.json"),
                "--scenarios",
                str(tmp_path / "s.json"),
                "--out",
                str(data),
            ],
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["export", "envscaler", "--home", str(data), "--out", str(out)]).exit_code == 0
    assert list(_load(out / "env_metadata.json")) == ["env_2", "env_10", "env_1"]
    assert _load(out / "scenario_metadata.json") == scenarios


def test_export_of_a_fixture_folder_takes_its_scenarios_beside_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["export", "envscaler", str(FIXTURES / "mini_shop"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert list(_load(tmp_path / "env_metadata.json")) == ["mini_shop"]
    assert len(_load(tmp_path / "scenario_metadata.json")) == 2


def test_imported_scenarios_get_a_title_from_their_task(imported: Path) -> None:
    from envscaler_mcp.catalog.store import index_row, write_index_rows

    path = imported / "scenarios" / "env_2.jsonl"
    assert [s.title for s in load_scenarios(path)] == ["Park the car with plate AB-123 in a free spot",
                                                       "Park car CD-456 in S1"]
    (rl,) = load_scenarios(imported / "scenarios" / "env_1.jsonl")
    assert rl.title == "Ada (member M1) wants to borrow Dune (B1)"
    shown = CliRunner().invoke(app, ["show", "env_1", "--home", str(imported)], env={"COLUMNS": "120"})
    assert shown.exit_code == 0 and "Ada (member M1) wants to borrow Dune (B1)" in shown.output
    # A home imported before titles were derived: empty titles, an index holding the task's first 80 characters
    untitled = [s.model_copy(update={"title": ""}) for s in load_scenarios(path)]
    path.write_text("".join(s.model_dump_json() + "\n" for s in untitled))
    write_index_rows(path, [index_row(s) | {"title": s.task[:80]} for s in untitled])
    assert "plate AB-123 in a free spot." in (imported / "scenarios" / "env_2.index.json").read_text()
    shown = CliRunner().invoke(app, ["show", "env_2", "--home", str(imported)], env={"COLUMNS": "120"})
    assert shown.exit_code == 0 and "Park the car with plate AB-123 in a free spot " in shown.output
    assert "free spot." not in shown.output  # the derived title, not the index's cut task
