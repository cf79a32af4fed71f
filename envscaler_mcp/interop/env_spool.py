"""Prepared environments kept in a temporary file, not in memory, while an import reads the scenarios.

An import converts every environment item before the first scenario (an environment's id depends on the ones
before it, and a scenario names its environment by EnvScaler's env_id, in any order). Held in memory, the
converted skeletons (class source, tools, kept EnvScaler fields: ~0.3 MB each) made the import's memory grow
with the number of environments. EnvSpool writes each skeleton to one temporary file as it is made and reads
it back when a scenario asks for it; the few most recently asked for stay in memory, so a scenario file grouped
by environment (EnvScaler's order) reads each skeleton once. What stays in memory per environment is its
offset in the file. The file is our own (never read from elsewhere) and removed by close().
"""

from __future__ import annotations

import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Iterator, MutableMapping
from types import TracebackType

from envscaler_mcp.skeleton.models import EnvSkeleton

KEPT = 4  # skeletons kept in memory, the most recently asked for


class EnvSpool(MutableMapping[str, EnvSkeleton]):
    """EnvScaler env_id -> prepared skeleton, stored in a temporary file in insertion order."""

    def __init__(self, kept: int = KEPT) -> None:
        self._file = tempfile.TemporaryFile(prefix="envscaler-import-")  # removed when closed
        self._offsets: dict[str, int] = {}
        self._recent: OrderedDict[str, EnvSkeleton] = OrderedDict()
        self._kept = kept

    def __setitem__(self, env_id: str, skeleton: EnvSkeleton) -> None:
        self._file.seek(0, 2)
        self._offsets[env_id] = self._file.tell()
        pickle.dump(skeleton, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._recent.pop(env_id, None)

    def __getitem__(self, env_id: str) -> EnvSkeleton:
        found = self._recent.get(env_id)
        if found is not None:
            self._recent.move_to_end(env_id)
            return found
        offset = self._offsets[env_id]  # KeyError for an unknown env_id, as a dict
        self._file.seek(offset)
        skeleton: EnvSkeleton = pickle.load(self._file)  # our own temporary file, written above
        self._recent[env_id] = skeleton
        if len(self._recent) > self._kept:
            self._recent.popitem(last=False)
        return skeleton

    def __delitem__(self, env_id: str) -> None:
        del self._offsets[env_id]
        self._recent.pop(env_id, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def close(self) -> None:
        self._file.close()
        self._recent.clear()

    def __enter__(self) -> EnvSpool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
