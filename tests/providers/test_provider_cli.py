"""`envscaler-mcp models`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.providers.cli import provider_rows
from tests.tables import assert_fits


def test_rows_follow_the_environment() -> None:
    rows = {r["provider"]: r for r in provider_rows({"OPENAI_API_KEY": "k"})}
    assert rows["openai/<model>"]["usable"] is True
    assert rows["anthropic/<model>"]["usable"] is False and "ANTHROPIC_API_KEY" in rows["anthropic/<model>"]["detail"]
    assert rows["openai-compatible/<model>"]["detail"] == "set OPENAI_COMPATIBLE_BASE_URL"
    assert rows["oracle"]["usable"] and rows["mock"]["usable"]


def test_models_json_lists_local_models_and_runtimes() -> None:
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    local = {m["model"]: m for m in data["local_models"]}
    assert set(local) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}
    assert local["qwen2.5-coder-1.5b"]["parts_total"] == 22
    assert local["qwen2.5-coder-1.5b"]["sha256"].startswith("cc324af0")
    assert set(data["runtimes"]) == {"llama-server", "xllamacpp"}


@pytest.mark.parametrize("width", [80, 120])
def test_the_models_tables_fit_the_terminal(width: int) -> None:
    result = CliRunner().invoke(app, ["models"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    ids = [r["provider"] for r in provider_rows({})] + ["local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-0.5b"]
    assert_fits(result.output, width, ids, ["provider", "usable here", "detail", "model", "parts", "assembled file",
                                            "sha256 verified"])
