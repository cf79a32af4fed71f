"""The Anthropic messages adapter against real SDK types over a fake transport."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.errors import ModelFault, ProviderError
from envscaler_mcp.providers import Message, ToolCallRequest, ToolDef, get_provider
from tests.providers.fakes import FakeServer, anthropic_message, error_body

pytestmark = pytest.mark.anyio
SPEC = "anthropic/claude-haiku-4-5-20251001"
TOOLS = [ToolDef(name="orders.get", description="Get an order.",
                 input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}})]
USER = [Message(role="system", content="sys"), Message(role="user", content="status of A and B?")]


def provider(fake_client, **kw):
    kw.setdefault("backoff_base_s", 0.0)
    return get_provider(SPEC, client=fake_client(), **kw)


async def test_parallel_tool_use_and_thinking(fake: FakeServer, anthropic_client) -> None:
    fake.answers.append((200, anthropic_message([
        {"type": "thinking", "thinking": "two lookups", "signature": "sig1"},
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "toolu_1", "name": "orders_get", "input": {"order_id": "A"}},
        {"type": "tool_use", "id": "toolu_2", "name": "orders_get", "input": {"order_id": "B"}},
    ], stop="tool_use")))
    turn = await provider(anthropic_client).complete(USER, TOOLS)
    m = turn.message
    assert [(c.id, c.name, c.arguments) for c in m.tool_calls] == [
        ("toolu_1", "orders.get", {"order_id": "A"}), ("toolu_2", "orders.get", {"order_id": "B"})]
    assert m.content == "Checking both." and m.reasoning == "two lookups" and m.reasoning_signature == "sig1"
    assert turn.finish_reason == "tool_calls"
    sent = fake.requests[0]
    assert sent["system"] == "sys" and sent["model"] == "claude-haiku-4-5-20251001"
    assert sent["tools"] == [{"name": "orders_get", "description": "Get an order.",
                              "input_schema": TOOLS[0].input_schema}]
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "status of A and B?"}]}]


async def test_tool_results_with_error_in_one_user_turn(fake: FakeServer, anthropic_client) -> None:
    fake.answers.append((200, anthropic_message([{"type": "text", "text": "A shipped; B unknown."}])))
    calls = [ToolCallRequest(id="toolu_1", name="orders.get", arguments={"order_id": "A"}),
             ToolCallRequest(id="toolu_2", name="orders.get", arguments={"order_id": "B"})]
    history = [*USER, Message(role="assistant", tool_calls=calls),
               Message(role="tool", tool_call_id="toolu_1", content="shipped"),
               Message(role="tool", tool_call_id="toolu_2", content="no such order", is_error=True)]
    turn = await provider(anthropic_client).complete(history, TOOLS)
    assert turn.message.content == "A shipped; B unknown." and turn.finish_reason == "stop"
    last = fake.requests[0]["messages"][-1]
    assert last["role"] == "user"
    assert [(b["tool_use_id"], b["is_error"]) for b in last["content"]] == [("toolu_1", False), ("toolu_2", True)]


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_retries(fake: FakeServer, anthropic_client, status: int) -> None:
    fake.answers += [(status, error_body()), (200, anthropic_message([{"type": "text", "text": "ok"}]))]
    turn = await provider(anthropic_client, retries=2).complete(USER)
    assert turn.message.content == "ok" and len(fake.requests) == 2


async def test_no_retry_on_400(fake: FakeServer, anthropic_client) -> None:
    fake.answers += [(400, error_body("invalid")), (200, anthropic_message([{"type": "text", "text": "x"}]))]
    with pytest.raises(ProviderError, match="HTTP 400"):
        await provider(anthropic_client, retries=3).complete(USER)
    assert len(fake.requests) == 1


async def test_a_prompt_too_long_is_the_models_context_overflow(fake: FakeServer, anthropic_client) -> None:
    fake.answers.append((400, error_body("prompt is too long: 210344 tokens > 200000 maximum")))
    with pytest.raises(ModelFault) as caught:
        await provider(anthropic_client, retries=3).complete(USER)
    assert caught.value.kind == "context_overflow" and len(fake.requests) == 1


async def test_usage_counts_cache_reads_and_costs(fake: FakeServer, anthropic_client) -> None:
    fake.answers.append((200, anthropic_message([{"type": "text", "text": "ok"}], input_tokens=600_000,
                                                output_tokens=100_000, cache_read=400_000)))
    turn = await provider(anthropic_client).complete(USER)
    u = turn.usage  # claude-haiku-4-5: $1 in, $0.10 cache read, $5 out per 1M
    assert (u.input_tokens, u.cached_tokens, u.output_tokens) == (1_000_000, 400_000, 100_000)
    assert u.cost_usd == pytest.approx(0.6 * 1 + 0.4 * 0.1 + 0.1 * 5)


async def test_cache_replay(fake: FakeServer, anthropic_client, tmp_path: Path) -> None:
    fake.answers.append((200, anthropic_message([{"type": "text", "text": "ok"}])))
    await provider(anthropic_client, cache_dir=tmp_path).complete(USER, TOOLS)
    again = await provider(anthropic_client, cache_dir=tmp_path).complete(USER, TOOLS)
    assert again.cached and again.message.content == "ok" and len(fake.requests) == 1


async def test_json_schema_setting_becomes_output_format(fake: FakeServer, anthropic_client) -> None:
    from envscaler_mcp.providers import GenerationSettings

    fake.answers.append((200, anthropic_message([{"type": "text", "text": "{}"}])))
    await provider(anthropic_client).complete(USER, settings=GenerationSettings(json_schema={"type": "object"}))
    assert fake.requests[0]["output_config"] == {"format": {"type": "json_schema", "schema": {"type": "object"}}}
    assert "temperature" not in fake.requests[0]
