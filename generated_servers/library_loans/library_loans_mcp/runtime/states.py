"""State files: initial states the launcher writes once per scenario into a folder this server may read
(`--state-dir`); an episode is created from one by name, so a large state is neither sent through the admin API
nor parsed again for every episode."""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

# Names the launcher gives state files: a content hash. Nothing else (no folders, no "..") is ever opened.
_NAME = re.compile(r"[0-9a-f]{16,64}\.json")


class StateFiles:
    """Parsed state files of one folder, the last `size` kept (a file's name is its content's hash, so a kept
    parse is never stale). Episodes copy what they are given (Journal.wrap), so one parse serves them all."""

    def __init__(self, folder: Path | None, size: int = 8) -> None:
        self.folder = folder
        self.size = size
        self._parsed: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def read(self, name: str) -> dict[str, Any]:
        """The state in file `name`; ValueError for a bad name, a missing folder or a file that is no state."""
        if self.folder is None:
            raise ValueError("this server was started without --state-dir, so it reads no state files")
        if not _NAME.fullmatch(name):
            raise ValueError(f"'{name}' is not a state file name (a content hash ending in .json)")
        state = self._parsed.get(name)
        if state is not None:
            self._parsed.move_to_end(name)
            return state
        try:
            value = json.loads((self.folder / name).read_bytes())
        except OSError as exc:
            raise ValueError(f"cannot read state file '{name}': {exc.strerror or exc}") from None
        if not isinstance(value, dict):
            raise ValueError(f"state file '{name}' is not a JSON object keyed by state attribute names")
        self._parsed[name] = value
        if len(self._parsed) > self.size:
            self._parsed.popitem(last=False)
        return value
