"""What the launcher and a server keep of large initial states is bounded in bytes, not only in count: the
writer remembers the names of a few megabytes of encoded texts (the most recent), the server keeps the
parses of a few megabytes of state files (the most recent). A kept entry is still used (no state is parsed
or written twice while kept), and a dropped one is read again correctly."""

from __future__ import annotations

import json
from pathlib import Path

from envscaler_mcp._json import ParsedState, parse_state
from envscaler_mcp.launch.statefiles import StateFileWriter
from tests.render._runtime import load_runtime


def _state(n: int, size: int) -> dict[str, object]:
    return {"items": {f"k{n}": "x" * size}}


def _parsed(n: int, size: int) -> ParsedState:
    parsed = parse_state(json.dumps(_state(n, size)).encode())
    assert parsed is not None
    return parsed


def test_writer_remembers_recent_texts_up_to_its_byte_bound(tmp_path: Path) -> None:
    writer = StateFileWriter(tmp_path / "states", remember_bytes=250_000)
    states = [_parsed(n, 100_000) for n in range(6)]  # each ~100 kB of text
    names = [writer.name_for(s) for s in states]
    assert writer.held_bytes <= 250_000  # two texts of the six, not six
    assert len(set(names)) == 6 and len(list((tmp_path / "states").iterdir())) == 6
    for state, name in zip(states, names, strict=True):  # every file holds its state, kept or dropped
        assert json.loads((tmp_path / "states" / name).read_bytes()) == json.loads(state.encoded)
    before = writer.held_bytes
    assert writer.name_for(states[-1]) == names[-1] and writer.held_bytes == before  # the latest is remembered
    assert writer.name_for(states[0]) == names[0]  # dropped: hashed again, the same name, no second file
    assert len(list((tmp_path / "states").iterdir())) == 6


def test_writer_keeps_the_latest_text_even_past_the_bound(tmp_path: Path) -> None:
    writer = StateFileWriter(tmp_path / "states", remember_bytes=10)
    state = _parsed(0, 1000)
    writer.name_for(state)
    assert writer.held_bytes == len(state.encoded)


def test_server_keeps_parsed_states_up_to_its_byte_bound(tmp_path: Path) -> None:
    states = load_runtime("states")
    names = []
    for n in range(5):
        text = json.dumps(_state(n, 100_000)).encode()
        name = f"{n:032x}.json"
        (tmp_path / name).write_bytes(text)
        names.append(name)
    files = states.StateFiles(tmp_path, size=8, max_bytes=250_000)
    parsed = [files.read(name) for name in names]
    assert len(files) == 2  # by bytes: two of ~100 kB each, though the count would allow eight
    assert files.read(names[-1]) is parsed[-1]  # kept: the same parse, not read again
    again = files.read(names[0])  # dropped: parsed again, equal
    assert again is not parsed[0] and again == _state(0, 100_000)
    small = states.StateFiles(tmp_path, size=3, max_bytes=10 << 20)
    for name in names:
        small.read(name)
    assert len(small) == 3  # by count when the states are small
    one = states.StateFiles(tmp_path, size=8, max_bytes=10)
    assert one.read(names[1]) == _state(1, 100_000) and len(one) == 1  # the latest is kept past the bound
