"""Size caps on untrusted output (harness/limits.py): tool results cut for the agent with a marker (the full
length recorded), a tool result or final state past its cap charged to the environment (infra_error with the
reason, not retried), an over-long answer charged to the model, stored transcripts bounded; and the `eval`
flags that set them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.limits import OutputLimits
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import BOB, ENV_INFO, MINI_SHOP, calls, shop_server

pytestmark = pytest.mark.anyio

SOLVE = [calls(("cancel_order", {"order_id": "O-1002"}),
               ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"}))]


def _config(**caps: int) -> EpisodeConfig:
    return EpisodeConfig(limits=OutputLimits(**caps), infra_backoff_s=0.0)


async def _run(agent: MockProvider, config: EpisodeConfig, transport: str = "memory") -> Any:
    async with shop_server(transport) as server, SandboxChecker() as checker:
        return await run_episode(BOB, source=server, agent=agent, checker=checker, env_info=ENV_INFO, config=config)


async def test_a_long_tool_result_is_cut_for_the_agent_with_a_marker_and_its_length_recorded() -> None:
    note = "n" * 3_000
    agent = MockProvider([calls(("add_note", {"order_id": "O-1001", "text": note})),
                          calls(("get_order", {"order_id": "O-1001"})), *SOLVE, "Done."])
    result = await _run(agent, _config(shown_result_chars=1_000))
    lookup = [m for m in result.messages if m.role == "tool"][1]
    assert lookup.full_chars is not None and lookup.full_chars > 3_000
    shown, marker = lookup.content[:1_000], lookup.content[1_000:]
    assert shown.startswith('{"success": true') and note[:500] in shown
    assert f"cut: the result has {lookup.full_chars:,} characters; the first 1,000 are shown" in marker
    assert result.status == "completed" and result.score == 1.0  # a long result is nobody's fault
    short = next(m for m in result.messages if m.role == "tool")
    assert short.full_chars is None and "cut:" not in short.content


@pytest.mark.parametrize("transport", ["memory", "pipe"])
async def test_a_tool_result_past_its_cap_is_the_environments_fault(transport: str) -> None:
    agent = MockProvider([calls(("add_note", {"order_id": "O-1001", "text": "n" * 6_000})),
                          calls(("get_order", {"order_id": "O-1001"})), *SOLVE, "Done."], repeat_last=True)
    result = await _run(agent, _config(tool_result_chars=5_000), transport)
    assert result.status == "infra_error" and result.score is None and not result.scorable
    assert result.attempts == 1  # the environment would do it again: not retried
    assert "the tool 'get_order' returned" in str(result.infra_reason)
    assert "more than the cap of 5,000 (--max-tool-result)" in str(result.infra_reason)


@pytest.mark.parametrize("transport", ["memory", "pipe"])
async def test_a_final_state_past_its_cap_is_the_environments_fault(transport: str) -> None:
    size = len(json.dumps(BOB.initial_state))
    agent = MockProvider([calls(("add_note", {"order_id": "O-1001", "text": "n" * 2_000})), *SOLVE, "Done."])
    result = await _run(agent, _config(state_bytes=size + 1_000), transport)
    assert result.status == "infra_error" and result.score is None and result.attempts == 1
    assert f"more than the cap of {size + 1_000:,} (--max-state)" in str(result.infra_reason)
    within = await _run(MockProvider([*SOLVE, "Done."]), _config(state_bytes=size + 1_000), transport)
    assert within.status == "completed" and within.score == 1.0  # the same cap, a state within it


async def test_an_over_long_answer_is_the_models_fault_scored_on_the_answer_cut() -> None:
    answer = "Cancelled O-1002. " + "blah " * 1_000
    result = await _run(MockProvider([*SOLVE, answer]), _config(answer_chars=1_000))
    assert result.status == "model_error" and str(result.model_error).startswith("answer_too_long:")
    assert f"{len(answer):,} characters, more than the cap of 1,000 (--max-answer)" in str(result.model_error)
    assert result.scorable and result.score == 1.0 and result.success is False  # scored; not a success
    assert result.final_answer.startswith(answer[:1_000]) and len(result.final_answer) < 1_100
    assert result.messages[-1].full_chars == len(answer)


async def test_a_stored_transcript_is_cut_to_its_cap() -> None:
    notes = [calls(("add_note", {"order_id": "O-1001", "text": f"{i}" * 4_000})) for i in range(6)]
    reads = [calls(("get_order", {"order_id": "O-1001"})) for _ in range(3)]
    result = await _run(MockProvider([*notes, *reads, *SOLVE, "Done."]), _config(transcript_chars=20_000))
    assert result.status == "completed" and result.score == 1.0
    share = 20_000 // len(result.messages)
    assert all(len(m.content) <= share + 100 for m in result.messages)
    cut = [m for m in result.messages if m.full_chars is not None]
    assert cut and all(m.full_chars > share for m in cut)


def test_eval_flags_set_the_caps(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "memory",
                                      "--max-state", "100", "--max-answer", "200", "--max-shown-result", "300",
                                      "--max-tool-result", "400", "--max-transcript", "5000",
                                      "--out", str(out), "--no-progress"])
    assert result.exit_code == 3, result.output  # every episode infra: over --max-infra
    config = json.loads((out / "run.json").read_text())["config"]["episode"]["limits"]
    assert config == {"shown_result_chars": 300, "tool_result_chars": 400, "state_bytes": 100, "answer_chars": 200,
                      "transcript_chars": 5_000}
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "infra_error" for r in records)
    assert all("(--max-state)" in r["infra_reason"] or "(--max-tool-result)" in r["infra_reason"] for r in records)
