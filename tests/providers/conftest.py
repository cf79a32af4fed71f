"""Fixtures of the provider tests (fakes in fakes.py)."""

from __future__ import annotations

from collections.abc import Callable

import anthropic
import openai
import pytest

from tests.providers.fakes import FakeServer


@pytest.fixture
def fake() -> FakeServer:
    return FakeServer()


@pytest.fixture
def openai_client(fake: FakeServer) -> Callable[[], openai.AsyncOpenAI]:
    return lambda: openai.AsyncOpenAI(api_key="test-key", http_client=fake.http_client(), max_retries=0)


@pytest.fixture
def anthropic_client(fake: FakeServer) -> Callable[[], anthropic.AsyncAnthropic]:
    return lambda: anthropic.AsyncAnthropic(api_key="test-key", http_client=fake.http_client(), max_retries=0)
