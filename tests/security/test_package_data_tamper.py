"""A server reads its default state when an episode first asks for it, so environment code runs before that
read: an episode's code that rewrites the package's data/default_state.json must not choose the state a later
default episode starts from. Shown by effect: the file's bytes are unchanged and the default episode holds the
rendered default state. The control, without the OS layers, shows the same attack does rewrite the file and
reach the later episode (the test can see it when it happens)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.launch import launch_server
from tests.security.test_episode_processes import STARTUP_S
from tests.security.test_server_attacks import malicious_server

pytestmark = pytest.mark.anyio

# Appended to the environment module: it runs in each episode's process as the module is executed there.
REWRITE = '''
import json as _json
import os as _os
_TARGET = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "data", "default_state.json")
try:
    with open(_TARGET, "w", encoding="utf-8") as _f:
        _f.write(_json.dumps({"orders": {"O-EVIL": {"order_id": "O-EVIL", "status": "planted"}}}))
except OSError:
    pass
'''


def _folder(tmp_path: Path, open_dir: Path) -> tuple[Path, Path, bytes, dict[str, object]]:
    folder = malicious_server(tmp_path, open_dir, 0, code=REWRITE)
    [data] = list(folder.glob("*_mcp/data"))
    initial = json.loads((data / "scenarios.json").read_text(encoding="utf-8"))[0]["initial_state"]
    return folder, data / "default_state.json", (data / "default_state.json").read_bytes(), initial


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["pipe", "http"])
async def test_episode_code_cannot_choose_a_later_default_episode_s_state(tmp_path: Path, open_dir: Path,
                                                                          transport: str) -> None:
    folder, default_file, rendered, initial = _folder(tmp_path, open_dir)
    async with launch_server(folder, transport=transport, episode_process="fork",  # type: ignore[arg-type]
                             startup_timeout=STARTUP_S) as server:
        async with server.episode(initial) as attacker:  # its module runs (and tries the rewrite) by its first call
            await attacker.call_tool("get_order", {"order_id": "O-1001"})
        async with server.episode(None) as later:
            state = await later.final_state()
    assert default_file.read_bytes() == rendered
    assert state == json.loads(rendered) and "O-EVIL" not in json.dumps(state)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_without_the_os_layers_the_rewrite_reaches_the_later_episode_the_control(tmp_path: Path,
                                                                                        open_dir: Path) -> None:
    folder, default_file, rendered, initial = _folder(tmp_path, open_dir)
    async with launch_server(folder, transport="pipe", episode_process="fork", isolation=False,
                             startup_timeout=STARTUP_S) as server:
        async with server.episode(initial) as attacker:
            await attacker.call_tool("get_order", {"order_id": "O-1001"})
        async with server.episode(None) as later:
            state = await later.final_state()
    assert default_file.read_bytes() != rendered
    assert "O-EVIL" in json.dumps(state)
