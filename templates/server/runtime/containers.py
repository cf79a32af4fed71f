"""The journaled containers: `JDict` and `JList` (subclasses of dict and list) of one episode's state.

While a call is journaled (`Journal.begin`), every mutation first appends an undo entry (undo.py) to the
container's journal, after the checks that could make the mutation fail; a plain dict or list it stores is
noted (`touched`) so that the journal converts it when the call commits. Copies, deep copies and pickles of a
journaled container are plain containers.
"""

from __future__ import annotations

import copy

from .undo import (
    MISSING,
    is_plain,
    undo_dict_del,
    undo_dict_restore,
    undo_dict_set,
    undo_list_insert_at,
    undo_list_removed,
    undo_list_restore,
    undo_list_set,
    undo_list_truncate,
)

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)

if TYPE_CHECKING:
    from typing import Any

    from .journal import Journal

    _Dict = dict[Any, Any]
    _List = list[Any]
else:
    _Dict, _List = dict, list


class JDict(_Dict):
    """A dict that records undo entries for its mutations while a call is journaled."""

    __slots__ = ("_journal",)
    _journal: Journal

    def __setitem__(self, k: Any, v: Any) -> None:
        j = self._journal
        if j.log is not None:
            j.log.append((undo_dict_set, self, k, dict.get(self, k, MISSING)))
            if is_plain(v):
                j.touched.append((self, k))  # type: ignore[union-attr]
        dict.__setitem__(self, k, v)

    def __delitem__(self, k: Any) -> None:
        log = self._journal.log
        if log is not None:
            old = dict.__getitem__(self, k)
            log.append((undo_dict_del, self, k, old, self._order_for(k)))
        dict.__delitem__(self, k)

    def _order_for(self, k: Any) -> list[Any] | None:
        # The key order is only needed when the key is not the last one (reinserting appends).
        if not dict.__len__(self) or next(reversed(dict.keys(self))) == k:
            return None
        return list(dict.keys(self))

    def pop(self, k: Any, *default: Any) -> Any:
        log = self._journal.log
        if log is not None and k in self:
            old = dict.__getitem__(self, k)
            log.append((undo_dict_del, self, k, old, self._order_for(k)))
        return dict.pop(self, k, *default)

    def popitem(self) -> tuple[Any, Any]:
        log = self._journal.log
        if log is not None and dict.__len__(self):
            k = next(reversed(dict.keys(self)))
            log.append((undo_dict_del, self, k, dict.__getitem__(self, k), None))
        return dict.popitem(self)

    def setdefault(self, k: Any, default: Any = None) -> Any:
        if k not in self:
            self[k] = default
        return dict.__getitem__(self, k)

    def update(self, *args: Any, **kwargs: Any) -> None:
        if self._journal.log is None:
            dict.update(self, *args, **kwargs)
            return
        for k, v in dict(*args, **kwargs).items():
            self[k] = v

    def __ior__(self, other: Any) -> JDict:  # type: ignore[misc]
        self.update(other)
        return self

    def clear(self) -> None:
        log = self._journal.log
        if log is not None and dict.__len__(self):
            log.append((undo_dict_restore, self, dict(self)))
        dict.clear(self)

    @classmethod
    def fromkeys(cls, keys: Any, value: Any = None) -> dict[Any, Any]:
        return dict.fromkeys(keys, value)

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        memo[id(self)] = result
        for k, v in dict.items(self):
            result[copy.deepcopy(k, memo)] = copy.deepcopy(v, memo)
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


class JList(_List):
    """A list that records undo entries for its mutations while a call is journaled."""

    __slots__ = ("_journal",)
    _journal: Journal

    def _snapshot(self) -> None:
        j = self._journal
        j.log.append((undo_list_restore, self, list(self)))  # type: ignore[union-attr]
        j.touched.append((self, None))  # type: ignore[union-attr]

    def __setitem__(self, i: Any, v: Any) -> None:
        log = self._journal.log
        if log is not None:
            if isinstance(i, slice):
                self._snapshot()
            else:
                n = len(self)
                j = i.__index__()
                j = j + n if j < 0 else j
                if not 0 <= j < n:
                    raise IndexError("list assignment index out of range")
                log.append((undo_list_set, self, j, list.__getitem__(self, j)))
                if is_plain(v):
                    self._journal.touched.append((self, None))  # type: ignore[union-attr]
        list.__setitem__(self, i, v)

    def __delitem__(self, i: Any) -> None:
        log = self._journal.log
        if log is not None:
            if isinstance(i, slice):
                self._snapshot()
            else:
                n = len(self)
                j = i.__index__()
                j = j + n if j < 0 else j
                if not 0 <= j < n:
                    raise IndexError("list assignment index out of range")
                log.append((undo_list_removed, self, j, list.__getitem__(self, j), n))
        list.__delitem__(self, i)

    def append(self, v: Any) -> None:
        j = self._journal
        if j.log is not None:
            j.log.append((undo_list_truncate, self, len(self)))
            if is_plain(v):
                j.touched.append((self, None))  # type: ignore[union-attr]
        list.append(self, v)

    def extend(self, values: Any) -> None:
        j = self._journal
        if j.log is not None:
            values = list(values)
            j.log.append((undo_list_truncate, self, len(self)))
            if any(is_plain(v) for v in values):
                j.touched.append((self, None))  # type: ignore[union-attr]
        list.extend(self, values)

    def __iadd__(self, values: Any) -> JList:  # type: ignore[misc]
        self.extend(values)
        return self

    def __imul__(self, n: Any) -> JList:  # type: ignore[misc]
        if self._journal.log is not None:
            self._snapshot()
        list.__imul__(self, n)
        return self

    def insert(self, i: Any, v: Any) -> None:
        log = self._journal.log
        if log is not None:
            n = len(self)
            j = i.__index__()
            if j < 0:
                j = max(j + n, 0)
            j = min(j, n)
            log.append((undo_list_insert_at, self, j, n))
            if is_plain(v):
                self._journal.touched.append((self, None))  # type: ignore[union-attr]
        list.insert(self, i, v)

    def pop(self, i: Any = -1) -> Any:
        log = self._journal.log
        if log is not None:
            n = len(self)
            j = i.__index__()
            j = j + n if j < 0 else j
            if not 0 <= j < n:
                raise IndexError("pop from empty list" if not n else "pop index out of range")
            log.append((undo_list_removed, self, j, list.__getitem__(self, j), n))
        return list.pop(self, i)

    def remove(self, v: Any) -> None:
        log = self._journal.log
        if log is not None:
            j = list.index(self, v)
            log.append((undo_list_removed, self, j, list.__getitem__(self, j), len(self)))
            list.__delitem__(self, j)
            return
        list.remove(self, v)

    def clear(self) -> None:
        if self._journal.log is not None and len(self):
            self._snapshot()
        list.clear(self)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        if self._journal.log is not None:
            self._snapshot()
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        if self._journal.log is not None:
            self._snapshot()
        list.reverse(self)

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        result: list[Any] = []
        memo[id(self)] = result
        result.extend(copy.deepcopy(v, memo) for v in self)
        return result

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))
