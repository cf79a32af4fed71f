"""Initial states handed to launched servers as files: each distinct state is written once, named by its
content's hash, into a folder only the launcher and its servers read (the server is given read access to that
folder alone: launch/confine.py). An episode is then created by naming the file, so a scenario's state is not
sent through the admin plane for every episode, and a server parses it once for all of them."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path

from envscaler_mcp._json import State, encode_json


class StateFileWriter:
    """Writes states into `folder` as <sha256>.json, each content once; remembers the names of the last
    `remember` state objects by identity (a scenario's state is handed in again for each of its episodes)."""

    def __init__(self, folder: Path, remember: int = 8) -> None:
        self.folder = folder
        self._remember = remember
        self._names: OrderedDict[int, tuple[State, str]] = OrderedDict()
        self._written: set[str] = set()

    def name_for(self, state: State) -> str:
        """The file name of `state` in `folder`, writing the file the first time its content is seen."""
        hit = self._names.get(id(state))
        if hit is not None and hit[0] is state:
            self._names.move_to_end(id(state))
            return hit[1]
        text = encode_json(state)
        name = hashlib.sha256(text).hexdigest()[:32] + ".json"
        if name not in self._written:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")  # renamed whole: never read half-written
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(text)
                os.replace(tmp, self.folder / name)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._written.add(name)
        self._names[id(state)] = (state, name)
        if len(self._names) > self._remember:
            self._names.popitem(last=False)
        return name

    def path_for(self, state: State) -> Path:
        """The file of `state` (written when new)."""
        return self.folder / self.name_for(state)
