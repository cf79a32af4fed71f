"""`import bfcl` on the committed fixture (tests/fixtures/bfcl, a few tasks per class from bfcl-eval 2026.3.23):
the data folder it writes, BFCL's types as JSON Schemas, ground-truth calls read with their signatures, turns
(functions held out until their turn, BFCL's own prompt for that turn), the response check per turn, and bad
input as one line."""

from __future__ import annotations

import json
import shutil
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from envscaler_mcp.catalog.store import list_env_ids, load_scenarios, load_skeleton
from envscaler_mcp.interop.bfcl import envruntime
from envscaler_mcp.interop.bfcl.importer import import_bfcl
from envscaler_mcp.interop.bfcl.source import ADDED_FUNCTIONS_PROMPT, CATEGORIES, BfclSource
from envscaler_mcp.interop.bfcl.tools import json_schema, parse_call, signatures
from envscaler_mcp.render.engine import build_files
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton import requirements
from tests.foundation.test_cli_errors import run_main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bfcl"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bfcl_home")
    result = import_bfcl(FIXTURE, out, list(CATEGORIES))
    assert result.skeletons
    return out


def scenarios_of(home: Path) -> dict[str, Scenario]:
    """Every imported scenario by BFCL task id."""
    return {s.extra["bfcl"]["id"]: s for env in list_env_ids(home / "environments")
            for s in load_scenarios(home / "scenarios" / f"{env}.jsonl")}


def test_one_environment_per_combination_of_classes_and_one_scenario_per_task(home: Path) -> None:
    source = BfclSource(FIXTURE)
    tasks = [t for c in CATEGORIES for t in source.tasks(c)]
    found = scenarios_of(home)
    assert sorted(found) == sorted(t["id"] for t in tasks)  # MathAPI's and task 173 too
    for task in tasks:
        scenario = found[task["id"]]
        assert scenario.env_id == "bfcl_" + "_".join(sorted(c.lower() for c in task["involved_classes"]))
        assert len(scenario.turns) == len(task["question"])
    skeleton = load_skeleton(home / "environments" / "bfcl_gorillafilesystem_twitterapi")
    assert [a.name for a in skeleton.state] == ["GorillaFileSystem", "TwitterAPI"]
    assert skeleton.provenance.source == "bfcl-import" and "Apache License 2.0" in skeleton.provenance.notes[0]
    assert "Apache License 2.0" in skeleton.class_source.splitlines()[1]
    assert [f.path for f in skeleton.free_fields] == ["*._*"]
    # tools are BFCL's docs of both classes, each a strict JSON Schema
    docs = [d["name"] for c in ("GorillaFileSystem", "TwitterAPI") for d in source.func_docs(c)]
    assert [t.name for t in skeleton.tools] == docs
    kinds = {t.name: t.kind for t in skeleton.tools}
    assert kinds["mkdir"] == kinds["post_tweet"] == kinds["mv"] == "state_change"  # mkdir: seen changing the tree
    assert kinds["ls"] == kinds["get_tweet"] == "query"
    for tool in skeleton.tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["additionalProperties"] is False


def test_the_initial_state_is_bfcls_instance_after_load_scenario(home: Path) -> None:
    scenario = scenarios_of(home)["multi_turn_base_0"]
    fs = scenario.initial_state["GorillaFileSystem"]
    assert fs["root"]["$directory"] == "workspace"
    document = fs["root"]["contents"]["document"]
    assert document["contents"]["final_report.pdf"]["content"].startswith("Year2024 This is the final report")
    assert fs["_current_dir"] == {"$path": []} and fs["long_context"] is False
    assert scenario.initial_state["TwitterAPI"]["tweets"]["$items"][0][0] == 0  # int keys kept as ints
    long = scenarios_of(home)["multi_turn_long_context_0"].initial_state["GorillaFileSystem"]
    assert long["long_context"] is True and len(json.dumps(long)) > 10 * len(json.dumps(fs))


def test_codec_round_trips_every_kind_of_bfcl_value() -> None:
    modules = envruntime.load_modules({"long_context": BfclSource(FIXTURE).module_source("long_context"),
                                       "gorilla_file_system": BfclSource(FIXTURE).module_source(
                                           "gorilla_file_system")})
    module = modules["gorilla_file_system"]
    generator = __import__("random").Random(7)
    value = {"t": (1, "a"), "s": {3, 1}, 4: [None, 2.5], "r": generator}
    back = envruntime.decode(json.loads(json.dumps(envruntime.encode(value))), module)
    assert back["t"] == (1, "a") and back["s"] == {1, 3} and back[4] == [None, 2.5]
    assert back["r"].random() == generator.random()
    fs = module.GorillaFileSystem()
    fs._load_scenario({"root": {"home": {"type": "directory", "contents": {
        "a": {"type": "directory", "contents": {"f.txt": {"type": "file", "content": "x"}}}}}}})
    fs.cd(folder="a")
    state = json.loads(json.dumps(envruntime.encode_instance(fs)))
    again = envruntime.decode_instance(module.GorillaFileSystem, state, module)
    assert again.root == fs.root and again.pwd() == fs.pwd() == {"current_working_directory": "/home/a"}
    assert again._current_dir.parent is again.root  # the current directory is a node of the tree, not a copy


def test_bfcl_types_become_json_schema() -> None:
    param = {"type": "dict", "description": "d", "properties": {
        "price": {"type": "float", "description": "p", "default": 1.0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pair": {"type": "tuple", "items": {"type": "integer"}},
        "anything": {"type": "any"}}, "required": ["price"]}
    assert json_schema(param) == {"type": "object", "description": "d", "properties": {
        "price": {"type": "number", "description": "p", "default": 1.0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "pair": {"type": "array", "items": {"type": "integer"}},
        "anything": {}}, "required": ["price"]}
    with pytest.raises(ValueError, match="unknown BFCL type"):
        json_schema({"type": "complex"})


def test_ground_truth_calls_are_read_with_the_methods_signatures() -> None:
    params = signatures(BfclSource(FIXTURE).module_source("gorilla_file_system"), "GorillaFileSystem")
    assert parse_call("sort('final_report.pdf')", params).arguments == {"file_name": "final_report.pdf"}
    call = parse_call("mv(source='a', destination='b')", params)
    assert (call.tool, call.arguments) == ("mv", {"source": "a", "destination": "b"})
    assert parse_call("tail('log.txt', 20)", params).arguments == {"file_name": "log.txt", "lines": 20}
    for bad, says in [("rm_rf('x')", "no method"), ("ls(a=b)", "not a literal"), ("ls(", "not a call"),
                      ("cd('a', 'b')", "takes 1 argument")]:
        with pytest.raises(ValueError, match=says):
            parse_call(bad, params)


def test_turns_hold_out_missed_functions_and_check_only_turns_with_ground_truth(home: Path) -> None:
    source = BfclSource(FIXTURE)
    found = scenarios_of(home)
    for task in source.tasks("miss_func"):
        if task["id"] not in found:
            continue
        scenario = found[task["id"]]
        for turn, names in task["missed_function"].items():
            n = int(turn)
            assert scenario.turns[n].tools_added == names and scenario.turns[n].user == ADDED_FUNCTIONS_PROMPT
            assert all(name in scenario.turn_tools_hidden(n - 1) for name in names)
    truth = source.ground_truth("miss_param")
    for task_id, scenario in found.items():
        if "miss_param" not in task_id:
            continue
        assert [bool(t.checks) for t in scenario.turns] == [bool(calls) for calls in truth[task_id]]
        assert [t.check_state for t in scenario.turns] == [bool(calls) for calls in truth[task_id]]
        assert not all(t.check_state for t in scenario.turns)  # miss_param: a turn leaves something out
        assert [len(t.reference) for t in scenario.turns] == [len(calls) for calls in truth[task_id]]
    base = found["multi_turn_base_0"]
    assert base.turns[0].user.startswith("Move 'final_report.pdf' within document directory")
    assert [t.checks for t in base.turns] == [["turn1"], ["turn2"], ["turn3"], ["turn4"]]
    assert all(c.kind == "transcript" for c in base.checklist)


def test_left_out_tasks_are_named_and_the_command_reads_a_wheel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    wheel = tmp_path / "bfcl_eval-2026.3.23-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in FIXTURE.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                archive.write(path, path.relative_to(FIXTURE).as_posix())
    code, out, err = run_main(["import", "bfcl", "--from", str(wheel), "--out", str(tmp_path / "home")], capsys)
    assert code == 0, err
    assert "note: task multi_turn_base_173: close_ticket: parameter ticket_id also takes a string" in out
    assert "left out" not in out
    assert "imported 8 environment(s) and 8 scenario(s) of base" in out
    code, out, err = run_main(["list", "--home", str(tmp_path / "home")], capsys)
    assert code == 0 and "bfcl_gorillafilesystem_mathapi" in out and out.count("bfcl-import") == 8


def test_tasks_of_a_class_whose_package_is_missing_are_left_out_with_the_install_to_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = requirements.metadata.distribution

    def without_mpmath(name: str) -> Any:
        if name == "mpmath":
            raise requirements.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(requirements.metadata, "distribution", without_mpmath)
    code, out, err = run_main(["import", "bfcl", "--from", str(FIXTURE), "--out", str(tmp_path / "home")], capsys)
    assert code == 0, err
    assert ("left out 1 task(s) involving MathAPI: it needs mpmath>=1.3, not installed in this Python "
            "(pip install 'mpmath>=1.3'") in out
    assert "imported 7 environment(s) and 7 scenario(s) of base" in out
    assert not (tmp_path / "home" / "environments" / "bfcl_gorillafilesystem_mathapi").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--category", "nope"], "unknown category nope"),
    (["--from", "/no/such/place"], "no such file or folder"),
    ([], "pass --from"),
    (["--from", "."], "not a bfcl-eval wheel or a folder holding bfcl_eval/"),
])
def test_bad_input_is_one_line_and_writes_nothing(args: list[str], says: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    if "--from" not in args and "--category" in args:
        args = [*args, "--from", str(FIXTURE)]
    code, out, err = run_main(["import", "bfcl", "--out", str(tmp_path / "home"), *args], capsys)
    assert code == 2 and says in err and "Traceback" not in out + err
    assert not (tmp_path / "home").exists()


def test_limit_takes_the_first_tasks_of_each_category(tmp_path: Path) -> None:
    result = import_bfcl(FIXTURE, tmp_path, ["base", "miss_param"], limit=2)
    firsts = [t["id"] for c in ("base", "miss_param") for t in BfclSource(FIXTURE).tasks(c)[:2]]
    assert sorted(scenarios_of(tmp_path)) == sorted(firsts) and sum(result.counts.values()) == 4
    assert not result.left_out and not result.unsupported


def test_mathapi_environments_declare_mpmath_and_their_server_depends_on_it(home: Path, tmp_path: Path) -> None:
    math = load_skeleton(home / "environments" / "bfcl_gorillafilesystem_mathapi")
    assert math.requirements == ["mpmath>=1.3"]
    assert load_skeleton(home / "environments" / "bfcl_tradingbot").requirements == []
    rendered = tomllib.loads(build_files(math, [])["pyproject.toml"].decode())
    assert rendered["project"]["dependencies"][-1] == "mpmath>=1.3"
    plain = tomllib.loads(build_files(load_skeleton(home / "environments" / "bfcl_tradingbot"), [])[
        "pyproject.toml"].decode())
    assert not any("mpmath" in d for d in plain["project"]["dependencies"])
    spec = json.loads(build_files(math, [])["bfcl_gorillafilesystem_mathapi_mcp/spec.json"])
    assert spec["requirements"] == ["mpmath>=1.3"]
    # BFCL's MathAPI results come through the server's environment module as BFCL records them
    scenario = scenarios_of(home)["multi_turn_base_15"]
    assert scenario.turns[-1].reference[0].tool == "mean"


def test_a_ground_truth_argument_of_another_type_widens_only_that_parameter(home: Path) -> None:
    """Task 173 closes 'ticket_001' (its data's id) where BFCL's docs say integer: BFCL executes it, so the
    parameter takes both, noted in the environment's provenance; nothing else is widened."""
    scenario = scenarios_of(home)["multi_turn_base_173"]
    skeleton = load_skeleton(home / "environments" / scenario.env_id)
    schema = skeleton.tool("close_ticket").input_schema
    assert schema["properties"]["ticket_id"]["type"] == ["integer", "string"]
    jsonschema.validate({"ticket_id": "ticket_001"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"ticket_id": 1.5}, schema)
    assert any("close_ticket: parameter ticket_id also takes a string" in n for n in skeleton.provenance.notes)
    assert skeleton.tool("resolve_ticket").input_schema["properties"]["ticket_id"]["type"] == "integer"
    other = load_skeleton(home / "environments" / "bfcl_gorillafilesystem_ticketapi")
    assert other.tool("close_ticket").input_schema["properties"]["ticket_id"]["type"] == "integer"
    assert scenario.turns[3].reference[0].arguments == {"ticket_id": "ticket_001"}


def test_a_ground_truth_call_of_a_function_held_out_until_later_leaves_the_task_out(tmp_path: Path) -> None:
    """BFCL's miss_func_49 calls `tail` in turn 2 though it is added back in turn 4: BFCL executes any method,
    the harness offers a tool only from its turn, so the task would fail its own ground truth here."""
    shutil.copytree(FIXTURE, tmp_path / "bfcl")
    answers = tmp_path / "bfcl" / "bfcl_eval" / "data" / "possible_answer" / "BFCL_v4_multi_turn_miss_func.json"
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    row = next(r for r in rows if r["id"] == "multi_turn_miss_func_0")  # sort is held out until turn 4
    row["ground_truth"][1].append("sort('final_report.pdf')")
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = import_bfcl(tmp_path / "bfcl", tmp_path / "home", ["miss_func"])
    assert result.left_out == ["task multi_turn_miss_func_0: turn 2: the ground truth calls sort, which BFCL holds "
                               "out until turn 4; a tool is offered only from its turn"]
    assert "multi_turn_miss_func_0" not in scenarios_of(tmp_path / "home")
    assert "multi_turn_miss_func_2" in scenarios_of(tmp_path / "home")
