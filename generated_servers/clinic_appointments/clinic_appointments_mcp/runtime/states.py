"""State files: initial states the launcher writes once per scenario into a folder this server may read
(`--state-dir`); an episode is created from one by name, so a large state is neither sent through the admin API
nor parsed again for every episode."""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any

# Names the launcher gives state files: a content hash. Nothing else (no folders, no "..") is ever opened.
_NAME = re.compile(r"[0-9a-f]{16,64}\.json")


class StateFiles:
    """Parsed state files of one folder, the last `size` kept while their files hold at most `max_bytes`
    between them, the latest always (a parse takes about 3x its text, a catalog's states may be megabytes
    each, and the launcher has at most 2 MB of scenario lines in flight). A file's name is its content's
    hash, so a kept parse is never stale. Episodes copy what they are given (Journal.wrap), so one parse
    serves them all."""

    def __init__(self, folder: str | os.PathLike[str] | None, size: int = 8, max_bytes: int = 2 << 20) -> None:
        self.folder = None if folder is None else os.fspath(folder)
        self.size = size
        self.max_bytes = max_bytes
        self._held = 0
        self._parsed: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()  # name -> (state, file bytes)

    def read(self, name: str) -> dict[str, Any]:
        """The state in file `name`; ValueError for a bad name, a missing folder or a file that is no state."""
        kept = self._parsed.get(name)
        if kept is not None:
            self._parsed.move_to_end(name)
            return kept[0]
        text = self.read_text(name)
        value = parse_state_file(name, text)
        self._parsed[name] = (value, len(text))
        self._held += len(text)
        while len(self._parsed) > 1 and (len(self._parsed) > self.size or self._held > self.max_bytes):
            self._held -= self._parsed.popitem(last=False)[1][1]
        return value

    def read_text(self, name: str) -> bytes:
        """The bytes of state file `name`, not parsed (an episode's own process parses them: zygote.py);
        ValueError for a bad name, a missing folder or a file that cannot be read."""
        if self.folder is None:
            raise ValueError("this server was started without --state-dir, so it reads no state files")
        if not _NAME.fullmatch(name):
            raise ValueError(f"'{name}' is not a state file name (a content hash ending in .json)")
        try:
            with open(os.path.join(self.folder, name), "rb") as f:
                return f.read()
        except OSError as exc:
            raise ValueError(f"cannot read state file '{name}': {exc.strerror or exc}") from None

    def __len__(self) -> int:
        """How many parsed states are kept."""
        return len(self._parsed)


def parse_state_file(name: str, text: bytes) -> dict[str, Any]:
    """The state a state file's bytes hold; ValueError when they are not a JSON object."""
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"state file '{name}' is not a JSON object keyed by state attribute names")
    return value
