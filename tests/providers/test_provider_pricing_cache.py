"""Price table lookups and overrides; the response cache's keys and torn files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.errors import InputFileError
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.cache import ResponseCache, request_key
from envscaler_mcp.providers.pricing import PriceTable


def test_longest_prefix_wins_and_unknown_is_none() -> None:
    table = PriceTable()
    assert table.price("openai/gpt-4o-mini-2024-07-18") == table.prices["openai/gpt-4o-mini"]
    assert table.price("openai/gpt-4o-2024-08-06") == table.prices["openai/gpt-4o"]
    assert table.price("openai-compatible/gpt-4o") is None
    assert table.usage("anthropic/claude-unknown", 10, 5).cost_usd is None
    assert table.usage("local/qwen2.5-coder-1.5b", 10, 5).cost_usd == 0.0


def test_bad_price_file_names_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"openai/x": {"input": "cheap"}}))
    with pytest.raises(InputFileError, match="openai/x"):
        PriceTable.load(bad)


def test_cache_key_covers_messages_tools_settings_not_timeout() -> None:
    msgs = [Message(role="user", content="hi")]
    tools = [ToolDef(name="t")]
    base = request_key("openai/gpt-4.1", msgs, tools, GenerationSettings())
    assert base == request_key("openai/gpt-4.1", msgs, tools, GenerationSettings(timeout_s=5))
    assert base != request_key("openai/gpt-4.1-mini", msgs, tools, GenerationSettings())
    assert base != request_key("openai/gpt-4.1", [Message(role="user", content="hi!")], tools, GenerationSettings())
    assert base != request_key("openai/gpt-4.1", msgs, [], GenerationSettings())
    assert base != request_key("openai/gpt-4.1", msgs, tools, GenerationSettings(max_tokens=7))


def test_torn_cache_file_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    cache.put("ab" * 32, "mock", AssistantTurn(message=Message(role="assistant", content="x")))
    assert cache.get("ab" * 32) is not None
    path = next(tmp_path.rglob("*.json"))
    path.write_text(path.read_text()[:20])
    assert cache.get("ab" * 32) is None
