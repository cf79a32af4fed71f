"""The local model's decision labels (the `plan` its answer grammar asks for) are not reasoning: the report
labels them for what they are, and trajectory exports leave them out, with or without --keep-reasoning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.report.export import export_run
from envscaler_mcp.report.html import render_report
from tests.harness.shop import BOB
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio


def _edit_bob(run: Path, edit: object) -> None:
    """Apply `edit(message)` to each assistant message of Bob's episode in results.jsonl."""
    path = run / "results.jsonl"
    lines = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["scenario_id"] == BOB.id:
            for message in record["messages"]:
                if message["role"] == "assistant":
                    edit(message)  # type: ignore[operator]
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")


def _exported(run: Path, fmt: str, out: Path) -> str:
    return export_run(run, fmt, out=out, keep_reasoning=True).path.read_text()


async def test_a_plan_is_labelled_in_the_report_and_never_exported(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    _edit_bob(run, lambda m: m.update(plan="cancel_order") if m["tool_calls"] else None)
    html = render_report(run)
    assert "decision label: cancel_order" in html
    assert '<pre class="reasoning">cancel_order' not in html
    assert '<pre class="reasoning">Look first.</pre>' in html  # real reasoning is still shown as reasoning
    for fmt in ("openai", "sharegpt"):
        text = _exported(run, fmt, tmp_path / f"{fmt}.jsonl")
        assert "cancel_order" in text and "Look first." in text  # the call, and the reasoning asked for
        assert '"plan"' not in text and "cancel_order\\n</think>" not in text
        assert not any(m.get("reasoning_content") == "cancel_order"
                       for r in map(json.loads, text.splitlines()) for m in r.get("messages", []))


async def test_a_local_run_recorded_before_plans_had_a_field_reads_them_as_labels(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    manifest = json.loads((run / "run.json").read_text())
    manifest["config"]["agent"] = "local/qwen2.5-coder-1.5b"  # its labels were kept as reasoning then
    (run / "run.json").write_text(json.dumps(manifest))
    html = render_report(run)
    assert "decision label: Look first." in html and '<pre class="reasoning">' not in html
    for fmt in ("openai", "sharegpt"):
        text = _exported(run, fmt, tmp_path / f"{fmt}.jsonl")
        assert "Look first." not in text and "reasoning_content" not in text and "<think>" not in text
    # a local run recorded with the field: its reasoning is reasoning
    _edit_bob(run, lambda m: m.update(plan="get_order") if m["tool_calls"] else None)
    assert '<pre class="reasoning">Look first.</pre>' in render_report(run)
