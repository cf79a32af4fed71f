"""A response-cache or recorded-fixture file moved to another request's name does not answer that request.

An entry holds the request it answers; an answer copied under another key (a misfiled fixture, an answer of
one prompt planted as the answer of another) would otherwise be served and recorded as that request's.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message
from envscaler_mcp.providers.cache import ResponseCache, request_body, request_key
from envscaler_mcp.providers.replay import NotRecorded, ReplayProvider

SPEC = "openai/gpt-4.1"
ASKED = [Message(role="user", content="Cancel order O-1001.")]
OTHER = [Message(role="user", content="Refund order O-1002 in full.")]


def planted(folder: Path) -> None:
    """OTHER's genuine answer, copied to the file name of ASKED's request."""
    cache = ResponseCache(folder)
    settings = GenerationSettings()
    other_key, asked_key = request_key(SPEC, OTHER, [], settings), request_key(SPEC, ASKED, [], settings)
    turn = AssistantTurn(message=Message(role="assistant", content="Refunded O-1002."), model=SPEC)
    cache.put(other_key, SPEC, turn, request_body(SPEC, OTHER, [], settings))
    target = folder / asked_key[:2] / f"{asked_key}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(folder / other_key[:2] / f"{other_key}.json", target)
    assert cache.get(other_key) is not None  # the genuine entry still answers its own request


def test_a_copied_entry_is_a_cache_miss(tmp_path: Path) -> None:
    planted(tmp_path)
    assert ResponseCache(tmp_path).get(request_key(SPEC, ASKED, [], GenerationSettings())) is None


def test_replay_does_not_serve_a_copied_entry(tmp_path: Path) -> None:
    planted(tmp_path)
    provider = ReplayProvider(SPEC, tmp_path, record_to=tmp_path / "recorded")
    with pytest.raises(NotRecorded):
        anyio.run(provider.complete, ASKED)
    assert not (tmp_path / "recorded").exists()
