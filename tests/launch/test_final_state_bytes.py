"""A final state read over the pipe costs one copy of its text fewer: the client's line reader holds neither the
line nor its message once handed on (it held the line until the server's next line, megabytes for a large
state), and the state's text is parsed as the str the message carries, not decoded again from bytes."""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters, types
from mcp.shared.message import SessionMessage

from envscaler_mcp.launch.episodes import AdminResult
from envscaler_mcp.launch.lines import line_client
from envscaler_mcp.launch.pipe import _Answer, _state_of

pytestmark = pytest.mark.anyio

SIZE = 3 << 20
# Answers the first request line with a 3 MB result, then waits for stdin to close.
_SERVER = f"""
import json, sys
request = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({{"jsonrpc": "2.0", "id": request["id"], "result": {{"state_json": "x" * {SIZE}}}}}) + "\\n")
sys.stdout.flush()
sys.stdin.read()
"""


async def test_the_line_reader_holds_no_answer_it_handed_on(tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-c", _SERVER])
    with open(tmp_path / "err.log", "w") as errlog:
        async with line_client(params, errlog) as (read, write):
            tracemalloc.start()
            try:
                ping = types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping")
                await write.send(SessionMessage(ping))
                with anyio.fail_after(60):
                    message = await read.receive()
                assert len(message.message.result["state_json"]) == SIZE
                del message
                gc.collect()
                held, _ = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    assert held < SIZE // 3, held  # the 3 MB line was kept until the next line came


def test_a_final_state_is_parsed_from_the_answer_s_text_without_another_copy() -> None:
    state = {"records": {f"R{i:05d}": {"id": f"R{i:05d}", "note": "y" * 40} for i in range(40_000)}}
    text = json.dumps(state)
    tracemalloc.start()
    try:
        json.loads(text)
        _, parse_alone = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = AdminResult.model_validate({"state_json": text})
        del text
        read = _state_of(result)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read == state and read.encoded == json.dumps(state).encode()  # type: ignore[attr-defined]
    assert "state_json" not in (result.model_extra or {})  # the answer no longer keeps the text alive
    # the parse, plus the text's bytes (kept with the state): no decoded copy of the text beside them
    assert peak < parse_alone + 1.5 * len(read.encoded), (peak, parse_alone)  # type: ignore[attr-defined]


def test_an_answer_s_state_text_moves_out_of_the_raw_message() -> None:
    # the SDK's read loop keeps the last message it dispatched (this dict) until the server's next one
    raw = {"closed": "e1", "state_json": "x" * 1000}
    answer = _Answer.model_validate(raw)
    assert raw == {"closed": "e1"} and (answer.model_extra or {})["state_json"] == "x" * 1000
    assert _Answer.model_validate({"episode_id": "e2"}).model_extra == {"episode_id": "e2"}
