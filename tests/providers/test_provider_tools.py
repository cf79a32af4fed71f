"""Tool-listing and message conversion: MCP -> ToolDef -> OpenAI / Anthropic, and back."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent, Tool

from envscaler_mcp.providers.base import Message, ToolCallRequest, ToolDef
from envscaler_mcp.providers.tools import (
    SAFE_NAME,
    ToolNames,
    anthropic_tools,
    from_openai_message,
    mcp_tools_to_defs,
    openai_tools,
    to_anthropic_messages,
    to_openai_messages,
    tool_result_message,
)

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def test_mcp_tools_become_defs_with_schema_and_description() -> None:
    tools = [Tool(name="get_order", description="Get one order.", input_schema=SCHEMA),
             Tool(name="ping", input_schema={"type": "object"})]
    defs = mcp_tools_to_defs(tools)
    assert defs[0] == ToolDef(name="get_order", description="Get one order.", input_schema=SCHEMA)
    assert defs[1].description == "" and defs[1].input_schema == {"type": "object", "properties": {}}


def test_unsafe_names_are_mapped_uniquely_and_back() -> None:
    raw = ["orders.get", "orders_get", "x" * 80, "y" * 80, "ok-name", "émoji✓"]
    names = ToolNames(raw)
    safe = [names.provider(n) for n in raw]
    assert all(SAFE_NAME.match(s) for s in safe)
    assert len(set(safe)) == len(raw)
    assert [names.mcp(s) for s in safe] == raw
    assert names.provider("ok-name") == "ok-name"
    assert names.mcp("invented_tool") == "invented_tool"


def test_openai_and_anthropic_tool_formats() -> None:
    defs = [ToolDef(name="orders.get", description="d", input_schema=SCHEMA)]
    names = ToolNames.from_defs(defs)
    assert openai_tools(defs, names) == [
        {"type": "function", "function": {"name": "orders_get", "description": "d", "parameters": SCHEMA}}]
    assert anthropic_tools(defs, names) == [{"name": "orders_get", "description": "d", "input_schema": SCHEMA}]


def _conversation() -> list[Message]:
    calls = [ToolCallRequest(id="c1", name="orders.get", arguments={"order_id": "A"}),
             ToolCallRequest(id="c2", name="orders.get", arguments={"order_id": "B"})]
    return [
        Message(role="system", content="be brief"),
        Message(role="user", content="status of A and B?"),
        Message(role="assistant", content="checking", tool_calls=calls),
        Message(role="tool", tool_call_id="c1", name="orders.get", content='{"status": "shipped"}'),
        Message(role="tool", tool_call_id="c2", name="orders.get", content="no such order", is_error=True),
        Message(role="user", content="thanks"),
    ]


def test_messages_to_openai_chat() -> None:
    names = ToolNames(["orders.get"])
    out = to_openai_messages(_conversation(), names)
    assert out[0] == {"role": "system", "content": "be brief"}
    assert out[2]["tool_calls"][1] == {"id": "c2", "type": "function",
                                       "function": {"name": "orders_get", "arguments": '{"order_id": "B"}'}}
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'}
    assert out[4] == {"role": "tool", "tool_call_id": "c2", "content": "ERROR: no such order"}


def test_messages_to_anthropic_merge_tool_results_into_one_user_turn() -> None:
    names = ToolNames(["orders.get"])
    system, out = to_anthropic_messages(_conversation(), names)
    assert system == "be brief"
    assert [t["role"] for t in out] == ["user", "assistant", "user"]
    assert out[1]["content"] == [
        {"type": "text", "text": "checking"},
        {"type": "tool_use", "id": "c1", "name": "orders_get", "input": {"order_id": "A"}},
        {"type": "tool_use", "id": "c2", "name": "orders_get", "input": {"order_id": "B"}},
    ]
    last = out[2]["content"]
    assert last[0] == {"type": "tool_result", "tool_use_id": "c1", "content": '{"status": "shipped"}', "is_error": False}
    assert last[1]["is_error"] is True and last[1]["tool_use_id"] == "c2"
    assert last[2] == {"type": "text", "text": "thanks"}


def test_anthropic_thinking_block_sent_back_with_signature() -> None:
    m = Message(role="assistant", content="ok", reasoning="let me think", reasoning_signature="sig")
    _, out = to_anthropic_messages([Message(role="user", content="q"), m], ToolNames())
    assert out[1]["content"][0] == {"type": "thinking", "thinking": "let me think", "signature": "sig"}


def test_undecodable_arguments_are_kept_raw_both_ways() -> None:
    from openai.types.chat import ChatCompletionMessage

    msg = ChatCompletionMessage.model_validate({
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "orders_get", "arguments": "{oops"}}]})
    ours = from_openai_message(msg, ToolNames(["orders.get"]))
    assert ours.tool_calls[0].name == "orders.get"
    assert ours.tool_calls[0].arguments == {} and ours.tool_calls[0].raw_arguments == "{oops"
    back = to_openai_messages([ours], ToolNames(["orders.get"]))
    assert back[0]["tool_calls"][0]["function"]["arguments"] == "{oops"


def test_tool_result_message_from_mcp_result() -> None:
    call = ToolCallRequest(id="c9", name="orders.get")
    ok = CallToolResult(content=[TextContent(type="text", text='{"a": 1}')])
    bad = CallToolResult(content=[], structured_content={"error": "x"}, is_error=True)
    assert tool_result_message(call, ok) == Message(role="tool", content='{"a": 1}', tool_call_id="c9",
                                                    name="orders.get")
    err = tool_result_message(call, bad)
    assert err.is_error and err.content == '{"error": "x"}'
