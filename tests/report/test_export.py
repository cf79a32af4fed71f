"""Trajectory export: OpenAI chat JSONL and LlamaFactory ShareGPT JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.errors import UsageError
from envscaler_mcp.report.export import export_run
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_openai_format_is_valid_chat_with_tools(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    records = _lines(export_run(run, "openai").path)
    assert len(records) == 2
    solved = next(r for r in records if len(r["messages"]) > 3)
    assert [t["function"]["name"] for t in solved["tools"]] == [
        "get_order",
        "list_orders",
        "cancel_order",
        "add_note",
    ]
    msgs = solved["messages"]
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    ids = {c["id"] for m in msgs if m["role"] == "assistant" for c in m.get("tool_calls", [])}
    assert all(m["tool_call_id"] in ids for m in msgs if m["role"] == "tool")
    assert all(
        isinstance(json.loads(c["function"]["arguments"]), dict)
        for m in msgs
        for c in m.get("tool_calls", [])
    )
    assert msgs[2]["content"] is None and msgs[5]["content"].startswith("ERROR: ")
    # only the fields OpenAI's chat fine-tuning format defines, unless reasoning is asked for
    assert msgs[-1] == {"role": "assistant", "content": "All done."}
    assert "reasoning_content" not in json.dumps(records) and "Look first." not in json.dumps(records)
    kept = _lines(export_run(run, "openai", out=tmp_path / "kept.jsonl", keep_reasoning=True).path)
    msgs = next(r for r in kept if len(r["messages"]) > 3)["messages"]
    assert msgs[2]["reasoning_content"] == "Look first." and msgs[2]["content"] is None
    assert msgs[-1] == {"role": "assistant", "content": "All done.", "reasoning_content": "Both changes made."}


async def test_sharegpt_format_alternates_roles_as_llamafactory_expects(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    plain = _lines(export_run(run, "sharegpt", min_score=1.0, out=tmp_path / "plain.jsonl").path)
    assert "<think>" not in json.dumps(plain) and plain[0]["conversations"][-1]["value"] == "All done."
    records = _lines(export_run(run, "sharegpt", min_score=1.0, keep_reasoning=True).path)
    assert len(records) == 1  # the lazy trajectory is filtered out by --min-score
    rec = records[0]
    assert rec["system"].startswith("You are") and json.loads(rec["tools"])[2]["name"] == "cancel_order"
    turns = rec["conversations"]
    for i, turn in enumerate(turns):
        assert turn["from"] in (("human", "observation") if i % 2 == 0 else ("gpt", "function_call"))
    assert turns[-1]["from"] == "gpt" and turns[-1]["value"].startswith(
        "<think>\nBoth changes made.\n</think>"
    )
    parallel = [t for t in turns if t["from"] == "function_call" and t["value"].endswith("]")]
    assert [c["name"] for c in json.loads(parallel[0]["value"])] == ["cancel_order", "add_note"]
    assert turns[1]["value"].startswith("<think>\nLook first.\n</think>\n\n")
    assert json.loads(turns[1]["value"].split("\n\n", 1)[1]) == {
        "name": "get_order",
        "arguments": {"order_id": "O-1002"},
    }


async def test_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    with pytest.raises(UsageError, match="openai, sharegpt"):
        export_run(run, "alpaca")


def test_export_command_writes_the_file(tmp_path: Path) -> None:
    import anyio
    from typer.testing import CliRunner

    from envscaler_mcp.cli import app

    run = anyio.run(make_run, tmp_path / "run")
    out = tmp_path / "train.jsonl"
    result = CliRunner().invoke(
        app, ["export", "run", str(run), "--format", "sharegpt", "--min-score", "0.5", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"wrote 1 of 2 episode(s) to {out}" in result.output and len(_lines(out)) == 1


def _main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """The real entry point in process: (exit code, stdout + stderr)."""
    from envscaler_mcp.cli import main

    with pytest.raises(SystemExit) as ended:
        main(args)
    out, err = capsys.readouterr()
    return int(ended.value.code or 0), out + err


def test_export_refuses_a_score_no_episode_can_have(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import anyio

    run = anyio.run(make_run, tmp_path / "run")
    out = tmp_path / "train.jsonl"
    with pytest.raises(UsageError, match="between 0 and 1"):
        export_run(run, "openai", min_score=-0.5, out=out)
    for bad in ("2", "-0.1"):
        code, output = _main(["export", "run", str(run), "--format", "openai", "--min-score", bad, "--out", str(out)],
                             capsys)
        assert code == 2, output
        [line] = output.strip().splitlines()
        assert line.startswith("error: ") and "--min-score" in line
    assert not out.exists()


def test_a_filter_that_matches_nothing_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import anyio

    from tests.harness.shop import BOB

    run = anyio.run(make_run, tmp_path / "run")
    results = run / "results.jsonl"  # Alice's episode only: it fails a check, so --checklist pass keeps nothing
    results.write_text("".join(line for line in results.read_text().splitlines(keepends=True)
                               if json.loads(line)["scenario_id"] != BOB.id))
    out = tmp_path / "train.jsonl"
    args = ["export", "run", str(run), "--format", "openai", "--checklist", "pass", "--out", str(out)]
    code, output = _main(args, capsys)
    assert code == 1, output
    [line] = output.strip().splitlines()
    assert line.startswith("error: nothing to export: none of its 1 episode(s) passes the filters")
    assert not out.exists() and not list(tmp_path.glob("*.jsonl*"))
    out.write_text("earlier\n")  # an earlier export is neither emptied nor replaced
    code, output = _main(args, capsys)
    assert code == 1 and "left as it was" in output and out.read_text() == "earlier\n"
    code, output = _main([a for a in args if a not in ("--checklist", "pass")], capsys)
    assert code == 0 and "wrote 1 of 1 episode(s)" in output and len(_lines(out)) == 1


def test_export_command_rejects_bad_input_without_writing(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from envscaler_mcp.cli import app
    from envscaler_mcp.errors import UsageError

    run = tmp_path / "run"
    run.mkdir()
    runner = CliRunner()
    no_format = runner.invoke(app, ["export", "run", str(run)])
    assert no_format.exit_code == 2 and "--format" in no_format.output
    bad_format = runner.invoke(app, ["export", "run", str(run), "--format", "alpaca"])
    assert bad_format.exit_code == 2 and "'alpaca' is not one of" in bad_format.output
    missing = runner.invoke(app, ["export", "run", str(tmp_path / "nope"), "--format", "openai"])
    assert isinstance(missing.exception, UsageError) and "not a run directory" in str(missing.exception)
    old_spelling = runner.invoke(app, ["export", str(run), "--format", "openai"])
    assert isinstance(old_spelling.exception, UsageError)
    assert f"envscaler-mcp export run {run} --format" in str(old_spelling.exception)
    assert list(run.iterdir()) == [] and not (tmp_path / "nope").exists()
