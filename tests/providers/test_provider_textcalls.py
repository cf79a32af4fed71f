"""The tolerant parser of tool calls written as text."""

from __future__ import annotations

import pytest

from envscaler_mcp.providers.textcalls import parse_text_tool_calls

TOOLS = {"get_order", "cancel_order", "list_orders"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('<tool_call>\n{"name": "get_order", "arguments": {"order_id": "A-1"}}\n</tool_call>',
         [("get_order", {"order_id": "A-1"})]),
        ('```json\n{\n  "name": "cancel_order",\n  "arguments": {\n    "order_id": "B-77",\n    "reason": "size"\n  }\n}\n```',
         [("cancel_order", {"order_id": "B-77", "reason": "size"})]),
        ('{"name": "list_orders", "arguments": {"customer_email": "j@x.org", "limit": 3}}',
         [("list_orders", {"customer_email": "j@x.org", "limit": 3})]),
        ('{"name": "get_order", "parameters": {"order_id": "A-2"}}', [("get_order", {"order_id": "A-2"})]),
        ('{{"name": "cancel_order", "arguments": {"order_id": "B-77", "reason": "r"}}}',
         [("cancel_order", {"order_id": "B-77", "reason": "r"})]),
        ('{{"name": "get_order", "arguments": {{"order_id": "Z"}}}}', [("get_order", {"order_id": "Z"})]),
        ('{"name": "get_order", "arguments": "{\\"order_id\\": \\"S\\"}"}', [("get_order", {"order_id": "S"})]),
        ('{"name": "list_orders", "arguments": null}', [("list_orders", {})]),
        ('I will look it up.\n<tool_call>{"name": "get_order", "arguments": {"order_id": "1"}}</tool_call>\n'
         '<tool_call>{"name": "get_order", "arguments": {"order_id": "2"}}</tool_call>',
         [("get_order", {"order_id": "1"}), ("get_order", {"order_id": "2"})]),
        ('[{"name": "get_order", "arguments": {"order_id": "1"}}, {"name": "cancel_order", "arguments": {"order_id": "1", "reason": "x"}}]',
         [("get_order", {"order_id": "1"}), ("cancel_order", {"order_id": "1", "reason": "x"})]),
        ('{"type": "function", "function": {"name": "get_order", "arguments": "{\\"order_id\\": \\"F\\"}"}}',
         [("get_order", {"order_id": "F"})]),
        ('{"tool_calls": [{"name": "get_order", "arguments": {"order_id": "W"}}]}', [("get_order", {"order_id": "W"})]),
        ('<tool_call>\n{"name": "get_order", "arguments": {"order_id": "A-1"}}', [("get_order", {"order_id": "A-1"})]),
    ],
)
def test_calls_are_found(text: str, expected: list[tuple[str, dict]]) -> None:
    calls, _ = parse_text_tool_calls(text, TOOLS)
    assert [(c.name, c.arguments) for c in calls] == expected
    assert len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Your order has shipped and will arrive in two days.",
        '{"name": "goodbye", "arguments": null}',  # invented tool
        '{"order_id": "A-1", "status": "shipped"}',  # ordinary JSON, no call
        '{"name": "get_order", "arguments": {"order_id": "A-1"',  # cut off
        '{"name": "get_order", "arguments": [1, 2]}',  # arguments not an object
        '{"name": "get_order", "arguments": "not json"}',
        "To find your order A-1042, you can call the `get_order` function.",
    ],
)
def test_no_call_is_invented(text: str) -> None:
    calls, rest = parse_text_tool_calls(text, TOOLS)
    assert calls == []
    assert rest == text


def test_prose_around_calls_is_kept_without_tags() -> None:
    text = 'Let me check.\n```json\n{"name": "get_order", "arguments": {"order_id": "A"}}\n```'
    calls, rest = parse_text_tool_calls(text, TOOLS)
    assert len(calls) == 1
    assert rest == "Let me check."


def test_no_declared_tools_means_no_calls() -> None:
    assert parse_text_tool_calls('{"name": "get_order", "arguments": {}}', [])[0] == []
