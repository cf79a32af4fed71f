"""A server reads its package's data files (the default state, the bundled scenarios) when first asked for them:
episodes that start from states the client names never parse them, in the server or in its episode zygote.

Shown by effect: with a default state that is no JSON, the server starts and serves episodes from named
states; an episode asking for the default state is refused with one clear reason, and the server (its zygote,
when episodes are forked) goes on serving."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.launch import launch_server
from envscaler_mcp.render.engine import render_server
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio


def _broken_default(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    out = render_server(skeleton(), scenarios(), tmp_path / "server")
    [data] = list(out.glob("*_mcp/data"))
    (data / "default_state.json").write_text("{ this is no JSON", encoding="utf-8")
    initial = json.loads((data / "scenarios.json").read_text(encoding="utf-8"))[0]["initial_state"]
    return out, initial


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("transport", "mode"), [("pipe", "fork"), ("http", "fork"), ("pipe", "shared"),
                                                 ("http", "shared")])
async def test_a_broken_default_state_costs_only_the_episodes_that_ask_for_it(tmp_path: Path, transport: str,
                                                                              mode: str) -> None:
    folder, initial = _broken_default(tmp_path)
    async with launch_server(folder, transport=transport, episode_process=mode) as server:  # type: ignore[arg-type]
        async with server.episode(initial) as ep:
            item = next(iter(initial["items"]))
            assert not (await ep.call_tool("get_item", {"item_id": item})).is_error
            assert (await ep.final_state()) == initial
        with pytest.raises(Exception) as refused:
            async with server.episode(None) as ep:
                await ep.call_tool("get_item", {"item_id": item})
        assert "data/default_state.json cannot be read" in str(refused.value), refused.value
        async with server.episode(initial) as ep:  # still serving
            assert (await ep.final_state()) == initial
