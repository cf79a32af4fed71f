"""Shared fixtures of the synth tests: the hand-written model router and the small task corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.providers.mock import MockProvider

from .fixtures.skel_router import SkelRouter

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def router() -> SkelRouter:
    return SkelRouter()


@pytest.fixture
def provider(router: SkelRouter) -> MockProvider:
    return MockProvider([router], repeat_last=True, spec="mock/skel-router")


@pytest.fixture
def corpus() -> Path:
    return FIXTURES / "skel_corpus.jsonl"
