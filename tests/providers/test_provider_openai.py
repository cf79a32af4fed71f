"""The OpenAI chat adapter (also OpenAI-compatible) against real SDK types over a fake transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.errors import ModelFault, ProviderError, ProviderNotConfigured, ProviderUnavailable
from envscaler_mcp.providers import GenerationSettings, Message, ToolCallRequest, ToolDef, get_provider
from envscaler_mcp.providers.cache import message_body
from tests.providers.fakes import FakeServer, error_body, openai_completion

pytestmark = pytest.mark.anyio
TOOLS = [ToolDef(name="orders.get", description="Get an order.",
                 input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}})]
USER = [Message(role="system", content="sys"), Message(role="user", content="status of A and B?")]


def provider(fake_client, spec: str = "openai/gpt-4.1", **kw):
    kw.setdefault("backoff_base_s", 0.0)
    return get_provider(spec, client=fake_client(), **kw)


async def test_parallel_tool_calls_names_mapped_back(fake: FakeServer, openai_client) -> None:
    fake.answers.append((200, openai_completion(None, [("c1", "orders_get", '{"order_id": "A"}'),
                                                       ("c2", "orders_get", '{"order_id": "B"}')])))
    turn = await provider(openai_client).complete(USER, TOOLS)
    assert [(c.id, c.name, c.arguments) for c in turn.message.tool_calls] == [
        ("c1", "orders.get", {"order_id": "A"}), ("c2", "orders.get", {"order_id": "B"})]
    assert turn.finish_reason == "tool_calls" and turn.model == "openai/gpt-4.1"
    sent = fake.requests[0]
    assert sent["model"] == "gpt-4.1"
    assert sent["tools"][0]["function"]["name"] == "orders_get"
    assert sent["temperature"] == 0.0 and sent["max_completion_tokens"] == 1024


async def test_tool_error_is_sent_back_with_prefix(fake: FakeServer, openai_client) -> None:
    fake.answers.append((200, openai_completion("Order B does not exist.")))
    call = ToolCallRequest(id="c2", name="orders.get", arguments={"order_id": "B"})
    history = [*USER, Message(role="assistant", tool_calls=[call]),
               Message(role="tool", tool_call_id="c2", name="orders.get", content="no such order", is_error=True)]
    turn = await provider(openai_client).complete(history, TOOLS)
    assert turn.message.content == "Order B does not exist."
    assert fake.requests[0]["messages"][-1] == {"role": "tool", "tool_call_id": "c2", "content": "ERROR: no such order"}
    assert fake.requests[0]["messages"][-2]["tool_calls"][0]["function"]["name"] == "orders_get"


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_retries_on_rate_limit_and_server_errors(fake: FakeServer, openai_client, status: int) -> None:
    fake.answers += [(status, error_body()), (status, error_body()), (200, openai_completion("done"))]
    turn = await provider(openai_client, retries=3).complete(USER)
    assert turn.message.content == "done"
    assert len(fake.requests) == 3


async def test_gives_up_after_retries(fake: FakeServer, openai_client) -> None:
    fake.answers += [(429, error_body("slow down"))] * 3
    with pytest.raises(ProviderError, match="failed after 3 attempts"):
        await provider(openai_client, retries=2).complete(USER)
    assert len(fake.requests) == 3


# Error bodies as the services word them (hand-written after their documented error shapes).
_REJECTIONS = [
    (400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 "
          "tokens.", ModelFault, "context_overflow"),
    (400, "request (8261 tokens) exceeds the available context size (8192 tokens), try increasing it",
     ModelFault, "context_overflow"),
    (400, "Your request was rejected as a result of our safety system.", ModelFault, "refusal"),
    (400, "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
          "'tool_calls'.", ModelFault, "invalid_request"),
    (401, "Incorrect API key provided", ProviderNotConfigured, None),
    (404, "The model `gpt-9` does not exist", ProviderNotConfigured, None),
]


@pytest.mark.parametrize(("status", "message", "error", "kind"), _REJECTIONS)
async def test_a_rejected_request_is_not_retried_and_says_whose_fault_it_is(
    fake: FakeServer, openai_client, status: int, message: str, error: type, kind: str | None
) -> None:
    fake.answers += [(status, error_body(message)), (200, openai_completion("never"))]
    with pytest.raises(error, match=f"HTTP {status}") as caught:
        await provider(openai_client, retries=3).complete(USER)
    assert len(fake.requests) == 1
    assert getattr(caught.value, "kind", None) == kind


async def test_an_exhausted_retry_budget_is_unavailability_not_a_model_fault(fake: FakeServer, openai_client) -> None:
    fake.answers += [(503, error_body("overloaded"))] * 2
    with pytest.raises(ProviderUnavailable):
        await provider(openai_client, retries=1).complete(USER)


async def test_usage_and_cost_from_price_table(fake: FakeServer, openai_client) -> None:
    fake.answers += [(200, openai_completion("a", prompt=1_000_000, completion=500_000, cached=200_000)),
                     (200, openai_completion("b", prompt=1000, completion=10))]
    p = provider(openai_client)  # built-in price: gpt-4.1 $2 in, $0.5 cached, $8 out per 1M
    first = await p.complete(USER)
    second = await p.complete(USER)
    assert first.usage.cost_usd == pytest.approx(0.8 * 2 + 0.2 * 0.5 + 0.5 * 8)
    total = first.usage + second.usage
    assert (total.input_tokens, total.output_tokens, total.cached_tokens, total.calls) == (1_001_000, 500_010, 200_000, 2)
    assert total.cost_usd == pytest.approx(first.usage.cost_usd + (1000 * 2 + 10 * 8) / 1e6)


async def test_unknown_model_counts_tokens_cost_unknown(fake: FakeServer, openai_client, tmp_path: Path) -> None:
    fake.answers += [(200, openai_completion("a", prompt=10, completion=5))] * 2
    turn = await provider(openai_client, "openai/my-finetune").complete(USER)
    assert turn.usage.input_tokens == 10 and turn.usage.cost_usd is None
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/my-finetune": {"input": 1.0, "output": 2.0}}))
    turn = await provider(openai_client, "openai/my-finetune", price_table=prices).complete(USER)
    assert turn.usage.cost_usd == pytest.approx((10 * 1 + 5 * 2) / 1e6)


async def test_cache_hit_does_not_touch_transport(fake: FakeServer, openai_client, tmp_path: Path) -> None:
    fake.answers.append((200, openai_completion(None, [("c1", "orders_get", '{"order_id": "A"}')])))
    first = await provider(openai_client, cache_dir=tmp_path).complete(USER, TOOLS)
    again = await provider(openai_client, cache_dir=tmp_path).complete(USER, TOOLS)
    assert len(fake.requests) == 1
    assert again.cached and not first.cached
    assert again.message == first.message
    assert again.usage.cost_usd == 0.0 and again.usage.calls == 0
    assert list(tmp_path.rglob("*.tmp")) == [] and len(list(tmp_path.rglob("*.json"))) == 1
    stored = json.loads(next(tmp_path.rglob("*.json")).read_text())  # the request is kept beside the answer
    assert stored["request"]["messages"] == [message_body(m) for m in USER]  # unset newer fields left out
    assert stored["request"]["tools"][0]["name"] == TOOLS[0].name and "timeout_s" not in stored["request"]["settings"]
    # a different request (other settings) misses the cache
    fake.answers.append((200, openai_completion("other")))
    other = await provider(openai_client, cache_dir=tmp_path).complete(USER, TOOLS, GenerationSettings(temperature=0.7))
    assert other.message.content == "other" and len(fake.requests) == 2


async def test_a_model_fault_is_cached_and_replayed_as_that_fault(fake: FakeServer, openai_client,
                                                                   tmp_path: Path) -> None:
    """A context overflow is the request's own: the same request fails the same way again, from the cache
    (no call), and a replay of recorded fixtures raises it too."""
    from envscaler_mcp.providers.replay import ReplayProvider

    fake.answers.append((400, error_body("request (8261 tokens) exceeds the available context size (8192 tokens)")))
    with pytest.raises(ModelFault) as first:
        await provider(openai_client, cache_dir=tmp_path).complete(USER)
    with pytest.raises(ModelFault) as again:
        await provider(openai_client, cache_dir=tmp_path).complete(USER)
    assert len(fake.requests) == 1 and again.value.kind == first.value.kind == "context_overflow"
    replay = ReplayProvider("openai/gpt-4.1", tmp_path, record_to=tmp_path / "fixtures", label="recorded")
    with pytest.raises(ModelFault, match="8261 tokens"):
        await replay.complete(USER)
    stored = json.loads(next((tmp_path / "fixtures").rglob("*.json")).read_text())
    assert stored["fault"]["kind"] == "context_overflow" and stored["label"] == "recorded"


async def test_reasoning_models_get_no_temperature(fake: FakeServer, openai_client) -> None:
    fake.answers.append((200, openai_completion("ok")))
    await provider(openai_client, "openai/o4-mini").complete(USER)
    assert "temperature" not in fake.requests[0]


async def test_json_schema_setting_becomes_response_format(fake: FakeServer, openai_client) -> None:
    fake.answers.append((200, openai_completion('{"x": 1}')))
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    await provider(openai_client).complete(USER, settings=GenerationSettings(json_schema=schema))
    assert fake.requests[0]["response_format"]["json_schema"]["schema"] == schema


async def test_compatible_server_text_calls_and_reasoning(fake: FakeServer, openai_client) -> None:
    text = '```json\n{"name": "orders_get", "arguments": {"order_id": "A"}}\n```'
    fake.answers.append((200, openai_completion(text, extra={"reasoning_content": "I should look it up"})))
    tools = [ToolDef(name="orders_get", description="", input_schema={"type": "object"})]
    p = provider(openai_client, "openai-compatible/qwen2.5")
    turn = await p.complete(USER, tools)
    assert [(c.name, c.arguments) for c in turn.message.tool_calls] == [("orders_get", {"order_id": "A"})]
    assert turn.message.content == "" and turn.message.reasoning == "I should look it up"
    assert fake.requests[0]["max_tokens"] == 1024
    assert turn.usage.cost_usd is None  # no price for a self-hosted model


async def test_official_openai_does_not_parse_text_calls(fake: FakeServer, openai_client) -> None:
    text = '{"name": "orders_get", "arguments": {"order_id": "A"}}'
    fake.answers.append((200, openai_completion(text)))
    tools = [ToolDef(name="orders_get", description="", input_schema={"type": "object"})]
    turn = await provider(openai_client).complete(USER, tools)
    assert turn.message.tool_calls == [] and turn.message.content == text


async def test_timeouts_and_connection_errors_are_retried(openai_client) -> None:
    import httpx2
    import openai

    seen: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append("x")
        if len(seen) == 1:
            raise httpx2.ReadTimeout("slow", request=request)
        if len(seen) == 2:
            raise httpx2.ConnectError("refused", request=request)
        return httpx2.Response(200, json=openai_completion("third time"))

    client = openai.AsyncOpenAI(api_key="k", max_retries=0,
                                http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    turn = await get_provider("openai/gpt-4.1", client=client, backoff_base_s=0.0).complete(USER)
    assert turn.message.content == "third time" and len(seen) == 3


async def test_concurrency_limit(openai_client) -> None:
    import anyio
    import httpx2
    import openai

    in_flight, peak = 0, 0

    async def handler(request: httpx2.Request) -> httpx2.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.02)
        in_flight -= 1
        return httpx2.Response(200, json=openai_completion("ok"))

    client = openai.AsyncOpenAI(api_key="k", max_retries=0,
                                http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))
    p = get_provider("openai/gpt-4.1", client=client, max_concurrency=2)
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(p.complete, USER)
    assert peak == 2
