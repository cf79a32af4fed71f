"""`catalog add`: a synthesized skeleton becomes an authoring folder of the catalog with its provenance and
quality, builds back to the same tools and code, and shows its origin in `list`."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from envscaler_mcp.skeleton.models import Provenance, QualityReport

runner = CliRunner()
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"


def _synthesized(tmp_path: Path) -> Path:
    skeleton = load_skeleton(MINI / "skeleton.json")
    provenance = Provenance(source="synthesized", source_id="task-7", models={"generator": "local/x", "tester": "local/x",
                                                                              "checker": "local/x"},
                            prompt_version="skel-1+abc", notes=["a note"])
    quality = QualityReport(method="dual-agent", passed=9, warnings=1, failed=0, score=1.0, threshold=0.85)
    path = tmp_path / "skeleton.json"
    path.write_text(skeleton.model_copy(update={"provenance": provenance, "quality": quality}).model_dump_json())
    return path


def test_a_synthesized_environment_joins_the_catalog_with_its_provenance(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = runner.invoke(app, ["catalog", "add", str(_synthesized(tmp_path)), "--scenarios",
                                 str(MINI / "scenarios.jsonl"), "--home", str(home)])
    assert result.exit_code == 0, result.output
    folder = home / "environments" / "mini_shop"
    assert sorted(p.name for p in folder.iterdir()) == ["default_state.json", "environment.py", "meta.json",
                                                        "skeleton.json"]
    built = load_skeleton(folder / "skeleton.json")
    assert built.provenance.source == "synthesized" and built.provenance.models["checker"] == "local/x"
    assert built.quality is not None and built.quality.score == 1.0
    original = load_skeleton(MINI / "skeleton.json")
    assert built.tools == original.tools and built.class_source == original.class_source
    assert len(load_scenarios(home / "scenarios" / "mini_shop.jsonl")) == len(load_scenarios(MINI / "scenarios.jsonl"))
    listed = runner.invoke(app, ["list", "--home", str(home)])
    assert listed.exit_code == 0 and "synthesized" in listed.output
    again = runner.invoke(app, ["catalog", "build", "--check", "--home", str(home)])
    assert again.exit_code == 0, again.output  # the folder builds to the skeleton.json written


def test_an_environment_already_there_is_refused_and_nothing_is_touched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    source = _synthesized(tmp_path)
    assert runner.invoke(app, ["catalog", "add", str(source), "--home", str(home)]).exit_code == 0
    meta = (home / "environments" / "mini_shop" / "meta.json").read_text()
    result = runner.invoke(app, ["catalog", "add", str(source), "--home", str(home)])
    assert isinstance(result.exception, UsageError)  # one line and exit 2 at the command line
    assert "already has an environment 'mini_shop'" in str(result.exception)
    assert (home / "environments" / "mini_shop" / "meta.json").read_text() == meta
    assert json.loads(meta)["provenance"]["source"] == "synthesized"
