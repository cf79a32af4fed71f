"""Fixtures of the conformance suite: one launched server per (subject, transport), shared by the session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from envscaler_mcp.launch import LaunchedServer, launch_server
from tests.conformance.subjects import Subject, get_subject, subject_names

TRANSPORTS = ["memory", "stdio", "http", "pipe"]
CALL_TIMEOUT = 1.5


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", params=subject_names())
def subject(request: pytest.FixtureRequest) -> Subject:
    return get_subject(request.param)


@pytest.fixture(scope="session", params=TRANSPORTS)
async def launched(subject: Subject, request: pytest.FixtureRequest, anyio_backend: str
                   ) -> AsyncIterator[LaunchedServer]:
    async with launch_server(subject.server.path, request.param, call_timeout=CALL_TIMEOUT,
                             client_timeout=60.0) as server:
        yield server
