"""The model stage's tolerance for operations whose method keeps failing."""

from __future__ import annotations

import pytest

from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.skel.mine import MineOptions, run_mine
from envscaler_mcp.synth.skel.modeling import ModelOptions, build_environment
from envscaler_mcp.synth.skel.pipeline import load_topics

from ..conftest import FIXTURES

pytestmark = pytest.mark.anyio


async def topics(tmp_path, provider):
    await run_mine(FIXTURES / "skel_corpus.jsonl", tmp_path, provider, MineOptions())
    return {t.env_id.split("_")[0]: t for t in load_topics(tmp_path)}


async def test_a_failed_method_is_left_out_when_allowed(tmp_path, router, provider):
    by_name = await topics(tmp_path, provider)

    def script(messages, tools):
        if "You implement one method" in messages[0].content and "- name: book_appointment" in messages[1].content:
            return "# Code\n```python\ndef book_appointment(self, doctor_id: str) -> dict:\n    raise ValueError()\n```"
        return router(messages, tools)

    broken = MockProvider([script], repeat_last=True)
    with pytest.raises(StepFailed, match="never raise"):
        await build_environment(broken, by_name["clinic"], ModelOptions(), UsageMeter())
    record = await build_environment(broken, by_name["clinic"], ModelOptions(max_failed_methods=1), UsageMeter())
    assert [t.name for t in record.skeleton.tools] == ["get_doctor", "list_appointments", "cancel_appointment"]
    assert [op.name for op in record.operations] == ["get_doctor", "list_appointments", "cancel_appointment"]
    assert any(n.startswith("book_appointment: left out") for n in record.skeleton.provenance.notes)


async def test_an_environment_needs_both_kinds_of_operation(tmp_path, provider):
    by_name = await topics(tmp_path, provider)
    with pytest.raises(StepFailed, match="no state_change operation is left"):
        await build_environment(provider, by_name["city"], ModelOptions(max_failed_methods=1), UsageMeter())


async def test_a_context_overflow_drops_that_environment_and_the_run_goes_on(tmp_path, router, provider):
    from envscaler_mcp._io import iter_jsonl
    from envscaler_mcp.errors import ModelFault
    from envscaler_mcp.synth.skel.modeling import run_model

    by_name = await topics(tmp_path, provider)

    def script(messages, tools):
        if "Clinic" in messages[-1].content or "clinic" in messages[-1].content:
            raise ModelFault("local/x: request (8261 tokens) exceeds the available context size (8192 tokens)",
                             "context_overflow")
        return router(messages, tools)

    overflowing = MockProvider([script], repeat_last=True)
    await run_model(list(by_name.values()), tmp_path, overflowing, ModelOptions(concurrency=1))
    dropped = [r for _, r in iter_jsonl(tmp_path / "model" / "dropped.jsonl")]
    by_env = {d["env_id"].split("_")[0]: d for d in dropped}
    assert by_env["clinic"]["kind"] == "context_overflow" and "8261 tokens" in by_env["clinic"]["reason"]
    assert (tmp_path / "model" / "envs" / f"{by_name['library'].env_id}.json").exists()
