"""Initial states handed to launched servers as files: each distinct state is written once, named by its
content's hash, into a folder only the launcher and its servers read (the server is given read access to that
folder alone: launch/server_process.py). An episode is then created by naming the file, so a scenario's state is not
sent through the admin plane for every episode, and a server parses it once for all of them."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path

from envscaler_mcp._io import atomic_write_bytes
from envscaler_mcp._json import State, initial_states
from envscaler_mcp.catalog.inflight import IN_FLIGHT_BYTES

# The encoded texts whose names are remembered are kept alive as keys: a few scenarios' states (those in
# flight, each with several episodes), not a catalog's. 64 MB here held 46 dead texts of 1.4 MB in the gate.
# As much as the scenario lines the gate and eval let be in flight at once.
REMEMBER_BYTES = IN_FLIGHT_BYTES


class StateFileWriter:
    """Writes states into `folder` as <sha256>.json, each content once, encoding through the process's cache of
    initial states (`_json.initial_states`, shared with the validators); remembers the name of each encoded
    text it has seen, the most recent first, up to `remember_bytes` of text (the latest always)."""

    def __init__(self, folder: Path, remember_bytes: int = REMEMBER_BYTES) -> None:
        self.folder = folder
        self.remember_bytes = remember_bytes
        self._names: OrderedDict[bytes, str] = OrderedDict()  # by the text object (its hash is computed once)
        self._held = 0
        self._written: set[str] = set()

    def name_for(self, state: State) -> str:
        """The file name of `state` in `folder`, writing the file the first time its content is seen."""
        text = initial_states().encode(state)
        name = self._names.get(text)
        if name is not None:
            self._names.move_to_end(text)
            return name
        name = hashlib.sha256(text).hexdigest()[:32] + ".json"
        if name not in self._written:  # renamed whole: the server never reads one half-written
            atomic_write_bytes(self.folder / name, text, durable=False)
            self._written.add(name)
        self._names[text] = name
        self._held += len(text)
        while len(self._names) > 1 and self._held > self.remember_bytes:  # the oldest texts go
            self._held -= len(self._names.popitem(last=False)[0])
        return name

    @property
    def held_bytes(self) -> int:
        """Bytes of encoded text kept alive to remember their names."""
        return self._held

    def path_for(self, state: State) -> Path:
        """The file of `state` (written when new)."""
        return self.folder / self.name_for(state)
