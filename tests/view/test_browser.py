"""The viewer in a real browser (Debian's Chromium driven by Playwright): the runs list, filters and search,
sorting, an episode's evidence, the comparison, and a run that grows while the page is open (new episodes
appear without a reload). Screenshots of each page go to test-artifacts/view/ (or $ENVSCALER_MCP_TEST_ARTIFACTS)."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.view.app import create_app
from tests.harness.shop import BOB
from tests.view.conftest import config

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (scripts/test.sh "
                                     "installs it with the dev extra)")
if not Path(CHROMIUM).exists():
    pytest.skip("Chromium is not installed (scripts/test.sh installs Debian's package where it can: apt-get "
                "install chromium)", allow_module_level=True)

ARTIFACTS = Path(os.environ.get("ENVSCALER_MCP_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts")) / "view"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def viewer(runs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The viewer over the test runs and a folder for runs made during the tests, served on loopback."""
    import uvicorn

    live_root = tmp_path_factory.mktemp("live")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app([runs_root, live_root]), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}", live_root
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def rows(page: Any) -> int:
    return int(page.locator("#episodes tbody tr").count())


def test_runs_list_and_run_page_filters(viewer: tuple[str, Path], page: Any) -> None:
    url, _ = viewer
    page.goto(url + "/")
    assert page.locator("#runs tr[data-run]").count() >= 2
    shot(page, "runs")
    page.click("text=idle")
    page.wait_for_selector("#episodes tbody tr")
    assert rows(page) == 2
    page.select_option("#f-success", "true")
    assert rows(page) == 0 and page.locator("#empty").is_visible()
    page.select_option("#f-success", "false")
    page.select_option("#f-failing", "checklist")
    assert rows(page) == 2
    page.fill("#search", "Bob")
    assert rows(page) == 1 and "Bob" in page.locator("#episodes tbody tr").inner_text()
    shot(page, "run-filtered")
    page.fill("#search", "")
    page.click("th[data-key=title]")
    first = page.locator("#episodes tbody tr").first.inner_text()
    page.click("th[data-key=title]")
    assert page.locator("#episodes tbody tr").first.inner_text() != first  # the order reversed


def test_episode_page_shows_the_evidence(viewer: tuple[str, Path], page: Any) -> None:
    url, _ = viewer
    page.goto(url + "/runs/idle")
    page.locator("#episodes tbody a").first.click()
    page.wait_for_selector("#checks")
    checks = page.locator("#checks").inner_text()
    assert "fail" in checks
    assert page.locator("#success").inner_text() == "no"
    page.locator("#initial-state summary").first.click()
    assert "O-1002" in page.locator("#initial-state").inner_text()
    shot(page, "episode")


def test_comparison(viewer: tuple[str, Path], page: Any) -> None:
    url, _ = viewer
    page.goto(url + "/compare?a=idle&b=oracle")
    assert "2 better" in page.content()
    page.check("#flipped-only")
    assert page.locator("#compare tr.flip-fixed").count() == 2
    shot(page, "compare")


def test_a_run_being_written_shows_new_episodes_without_reload(viewer: tuple[str, Path], page: Any) -> None:
    import anyio

    url, live_root = viewer
    out = live_root / "growing"
    release = threading.Event()

    def held(messages: Any, tools: Any) -> str:
        assert release.wait(120)  # the second scenario's agent answers once the page shows the first
        return "Done."

    agent = Seat("mock", factory=lambda sc: MockProvider(["Done."] if sc.id == BOB.id else [held]))
    cfg = config().model_copy(update={"concurrency": 1})
    thread = threading.Thread(target=lambda: anyio.run(lambda: run_eval(cfg, out, agent=agent)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        results = out / "results.jsonl"
        if results.exists() and results.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.1)
    page.goto(url + "/runs/growing")
    page.wait_for_function("document.querySelectorAll('#episodes tbody tr').length === 1")
    assert page.locator("#live").is_visible()
    release.set()
    page.wait_for_function("document.querySelectorAll('#episodes tbody tr').length === 2", timeout=60_000)
    shot(page, "run-live")
    thread.join(timeout=120)
