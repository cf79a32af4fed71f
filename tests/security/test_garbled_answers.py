"""An episode process that answers a tool call with text that is not JSON, as environment code can make it do:
it runs in that process, so it can replace the `json.dumps` the runtime encodes results with.

The server contract: a result that is not JSON is an error result (`isError`), never a success whose text
the agent and the transcript take as the tool's answer, and never a failure of the server. Checked by effect,
on pipe and HTTP, with and without the structured copy the harness leaves out (`text_only`): the call is an
error result, the garbled text reaches nobody, the episode process is gone (it broke the protocol), and the
same server still serves a new episode. Before the fix, a text-only call passed the garbled text on as a
success, and a call with the copy failed inside the server's handler (an MCP error, not a result).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import launch_server
from tests.security.test_episode_processes import STARTUP_S, _initial
from tests.security.test_server_attacks import malicious_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(STARTUP_S)]

MARK = "GARBLED-BY-THE-ENVIRONMENT"

# Appended to environment.py: every answer whose `data` is a list (list_orders) goes out as non-JSON text.
GARBLE = f'''

import json as _json

_real_dumps = _json.dumps


def _garbled_dumps(value, *args, **kwargs):
    text = _real_dumps(value, *args, **kwargs)
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return "{MARK} " + text
    return text


_json.dumps = _garbled_dumps
'''


@pytest.mark.parametrize("transport", ["pipe", "http"])
@pytest.mark.parametrize("text_only", [True, False])
async def test_a_tool_answer_that_is_not_json_is_an_error_result(tmp_path: Path, transport: str,
                                                                  text_only: bool) -> None:
    server_dir = malicious_server(tmp_path, tmp_path, 9, code=GARBLE)
    async with launch_server(server_dir, transport=transport, episode_process="fork") as server:  # type: ignore[arg-type]
        async with server.episode(_initial(server_dir)) as ep:
            assert not (await ep.call_tool("get_order", {"order_id": "O-1001"}, text_only=text_only)).is_error
            garbled = await ep.call_tool("list_orders", {}, text_only=text_only)
            text = read_result(garbled).text
            assert garbled.is_error and garbled.structured_content is None, text
            assert MARK not in text and "not a JSON object" in text, text
            again = await ep.call_tool("get_order", {"order_id": "O-1001"}, text_only=text_only)
            assert again.is_error and "episode's state is lost" in read_result(again).text  # its process is gone
        async with server.episode(_initial(server_dir)) as fresh:  # the server serves on
            found = await fresh.call_tool("get_order", {"order_id": "O-1001"}, text_only=text_only)
            assert not found.is_error and read_result(found).value["data"]["order_id"] == "O-1001"
