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


def test_the_prices_file_of_the_environment_updates_the_table_and_an_explicit_table_wins(tmp_path: Path) -> None:
    user = tmp_path / "prices.json"
    user.write_text(json.dumps({"openai/gpt-4.1": {"input": 1.0, "output": 4.0},
                                "openai/gpt-9": {"input": 3.0, "output": 9.0}}))
    env = {"ENVSCALER_MCP_PRICES": str(user)}
    table = PriceTable.load(None, env=env)
    assert table.usage("openai/gpt-4.1-2025-04-14", 1_000_000, 1_000_000).cost_usd == 5.0
    assert table.usage("openai/gpt-9", 1_000_000, 0).cost_usd == 3.0
    assert table.price("openai/gpt-4o") == PriceTable().prices["openai/gpt-4o"]  # the rest stays built in
    assert PriceTable.load(None, env={}).price("openai/gpt-9") is None
    explicit = PriceTable.load({"openai/gpt-4.1": {"input": 7.0, "output": 7.0}}, env=env)
    assert explicit.usage("openai/gpt-4.1", 1_000_000, 0).cost_usd == 7.0
    assert explicit.usage("openai/gpt-9", 1_000_000, 0).cost_usd == 3.0


@pytest.mark.parametrize("content", [None, "[1]", '{"openai/x": {"output": 1}}'])
def test_a_bad_or_missing_prices_file_of_the_environment_is_named(tmp_path: Path, content: str | None) -> None:
    user = tmp_path / "prices.json"
    if content is not None:
        user.write_text(content)
    with pytest.raises(InputFileError, match=r"prices\.json"):
        PriceTable.load(None, env={"ENVSCALER_MCP_PRICES": str(user)})
