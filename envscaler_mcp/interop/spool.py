"""What an import has read and will need again, kept in a temporary file, not in memory.

An import converts every environment item before the first scenario (an environment's id depends on the ones
before it, and a scenario names its environment by EnvScaler's env_id, in any order). Held in memory, the
converted skeletons (class source, tools, kept EnvScaler fields: ~0.3 MB each) made the import's memory grow
with the number of environments; likewise the trajectories of `import --trajectories`, read before the replay
of each environment's scenarios (691 MB for 115 rollout records of 1.3 MB states). A Spool writes each value to
one temporary file as it is put and reads it back when asked for it; the few most recently asked for stay in
memory, so values asked for in the order they were put (EnvScaler's files are grouped by environment) are read
once. What stays in memory per value is its offset in the file. The file is our own (never read from
elsewhere) and removed by close().
"""

from __future__ import annotations

import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Hashable, Iterator, MutableMapping
from types import TracebackType
from typing import Generic, Self, TypeVar

from envscaler_mcp.skeleton.models import EnvSkeleton

KEPT = 4  # values kept in memory, the most recently asked for

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Spool(MutableMapping[K, V], Generic[K, V]):
    """key -> value, the values pickled into a temporary file in insertion order."""

    def __init__(self, kept: int = KEPT) -> None:
        self._file = tempfile.TemporaryFile(prefix="envscaler-import-")  # removed when closed
        self._offsets: dict[K, int] = {}
        self._recent: OrderedDict[K, V] = OrderedDict()
        self._kept = kept

    def __setitem__(self, key: K, value: V) -> None:
        self._file.seek(0, 2)
        self._offsets[key] = self._file.tell()
        pickle.dump(value, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._recent.pop(key, None)

    def __getitem__(self, key: K) -> V:
        if key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key]
        offset = self._offsets[key]  # KeyError for an unknown key, as a dict
        self._file.seek(offset)
        value: V = pickle.load(self._file)  # our own temporary file, written above
        self._recent[key] = value
        if len(self._recent) > self._kept:
            self._recent.popitem(last=False)
        return value

    def __delitem__(self, key: K) -> None:
        del self._offsets[key]
        self._recent.pop(key, None)

    def __iter__(self) -> Iterator[K]:
        return iter(self._offsets)

    def __len__(self) -> int:
        return len(self._offsets)

    def close(self) -> None:
        self._file.close()
        self._recent.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class EnvSpool(Spool[str, EnvSkeleton]):
    """EnvScaler env_id -> prepared skeleton (empty default state), in file order."""
