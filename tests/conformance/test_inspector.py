"""An independent client: the MCP Inspector CLI (npm @modelcontextprotocol/inspector 2.12.0) lists and calls tools."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests.conformance.subjects import FIXTURE, get_subject, subject_names

INSPECTOR_VERSION = "2.12.0"


def _inspector() -> str:
    path = shutil.which("mcp-inspector")
    if path is None:
        pytest.skip(f"MCP Inspector CLI not installed: npm install -g @modelcontextprotocol/inspector@{INSPECTOR_VERSION}")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    subject = get_subject(FIXTURE)
    server = [sys.executable, "-m", subject.server.package]
    cmd = [_inspector(), "--cli", "--format", "json", "-e", f"PYTHONPATH={subject.server.path}", *server, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


def test_inspector_lists_tools_with_annotations() -> None:
    result = _run("--method", "tools/list")
    assert result.returncode == 0, result.stderr
    tools = {t["name"]: t for t in json.loads(result.stdout)["result"]["tools"]}
    assert list(tools) == [t["name"] for t in get_subject(FIXTURE).spec["tools"]]
    assert tools["get_item"]["annotations"]["readOnlyHint"] is True
    assert tools["add_item"]["annotations"]["destructiveHint"] is True
    assert tools["get_item"]["inputSchema"]["required"] == ["item_id"]


def test_inspector_calls_a_tool_and_sees_errors() -> None:
    ok = _run("--method", "tools/call", "--tool-name", "get_item", "--tool-args-json", '{"item_id": "i1"}')
    assert ok.returncode == 0, ok.stderr
    result = json.loads(ok.stdout)["result"]
    assert result["isError"] is False and result["structuredContent"]["data"]["name"] == "Kettle"
    bad = _run("--method", "tools/call", "--tool-name", "get_item", "--tool-args-json", '{"item_id": 7}')
    assert bad.returncode == 5  # the Inspector's exit code for an isError result
    assert "Invalid arguments" in bad.stdout + bad.stderr


@pytest.mark.anyio
async def test_inspector_over_streamable_http() -> None:
    import anyio

    from envscaler_mcp.launch import launch_server
    from envscaler_mcp.launch.servers import HttpServer

    inspector = _inspector()
    subject = get_subject(FIXTURE)
    async with launch_server(subject.server.path, "http") as server:
        assert isinstance(server, HttpServer)
        async with server.episode(subject.scenarios[1].initial_state) as ep:
            assert await ep.get_state() == subject.scenarios[1].initial_state  # its first use creates it
            url = f"{server.url}/episodes/{ep.episode_id}/mcp"
            done = await anyio.run_process([inspector, "--cli", "--format", "json", "--server-url", url,
                                            "--method", "tools/call", "--tool-name", "list_items",
                                            "--tool-args-json", "{}"], check=False)
    assert done.returncode == 0, done.stderr.decode()
    items = json.loads(done.stdout)["result"]["structuredContent"]["data"]
    assert [i["item_id"] for i in items] == ["i9"]  # the episode's own state, not the default one


@pytest.mark.slow
@pytest.mark.parametrize("name", subject_names())
def test_inspector_strict_finds_no_schema_errors(name: str) -> None:
    """The Inspector's --strict portability report (exit 6 on errors; warnings are allowed)."""
    subject = get_subject(name)
    cmd = [_inspector(), "--cli", "--strict", "-e", f"PYTHONPATH={subject.server.path}",
           sys.executable, "-m", subject.server.package, "--method", "tools/list"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
