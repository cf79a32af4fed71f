"""Test-wide settings: tests never reach the network or a real LLM provider."""

from __future__ import annotations

import os

import pytest

# Provider adapters refuse to send a real request while this is set (see envscaler_mcp/providers).
os.environ["ENVSCALER_MCP_BLOCK_REQUESTS"] = "1"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", default=False, help="run tests that call real LLM providers")


# Folders whose tests share session-scoped fixtures (a Ray cluster, launched servers, a browser): under
# pytest-xdist each runs whole in one worker, so the fixture starts once.
_SHARED_SESSION = ("tests/cluster/", "tests/conformance/", "tests/view/")


def _worker_group(nodeid: str) -> str:
    """The unit pytest-xdist's loadgroup hands to one worker: a folder of _SHARED_SESSION, else one file
    (its module-scoped fixtures start once)."""
    path = nodeid.split("::", 1)[0]
    return next((folder for folder in _SHARED_SESSION if path.startswith(folder)), path)


@pytest.hookimpl(tryfirst=True)  # the groups are marked before pytest-xdist reads them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The conformance suite shares launched servers through session-scoped async fixtures, which keep an
    # event loop running in the main thread until the session ends; tests that start their own loop
    # (CLI commands calling anyio.run) must therefore run before it (in each pytest-xdist worker too:
    # scripts/test.sh keeps the collection order with --no-loadscope-reorder).
    items.sort(key=lambda item: "tests/conformance/" in item.nodeid.replace("\\", "/"))
    if config.pluginmanager.hasplugin("xdist"):  # the marker exists only with pytest-xdist installed
        for item in items:
            item.add_marker(pytest.mark.xdist_group(_worker_group(item.nodeid.replace("\\", "/"))))
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live provider test: pass --live and set the provider's API key")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _default_home() -> object:
    """A command's --home lasts for the rest of its process: give every test the default data home back."""
    from envscaler_mcp.catalog.paths import set_home

    yield
    set_home(None)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets an empty cache folder of its own (stored references): nothing is read from or written to
    the user's cache, and no test sees another's."""
    monkeypatch.setenv("ENVSCALER_MCP_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
