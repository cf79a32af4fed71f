"""A tool result of tens of MiB over the pipe and stdio transports: it arrives whole, and in linear time.

The SDK's stdio client joined its pending text to every 64 KiB chunk it read, so a 16 MiB result took 50 s
(24 MiB: about two minutes, past the 90 s this test allows even on a loaded machine); launch/lines.py joins
the chunks of a line once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import launch_server
from tests.security.test_server_attacks import malicious_server

pytestmark = pytest.mark.anyio

BIG = '''

def _big(self, order_id, text):
    return {"success": True, "data": order_id * (int(text) * 1024 * 1024)}


MiniShop.add_note = _big
'''


@pytest.mark.parametrize("transport", ["pipe", "stdio"])
async def test_a_huge_tool_result_arrives_whole(tmp_path: Path, transport: str) -> None:
    server_dir = malicious_server(tmp_path, tmp_path, 9, code=BIG)
    async with launch_server(server_dir, transport=transport, client_timeout=90) as server:
        async with server.episode() as ep:
            big = await ep.call_tool("add_note", {"order_id": "z", "text": "24"})
            small = await ep.call_tool("add_note", {"order_id": "y", "text": "0"})
    assert not big.is_error and read_result(big).value is not None
    assert read_result(big).value["data"] == "z" * (24 << 20)
    assert read_result(small).value == {"success": True, "data": ""}  # the next message is read in step
