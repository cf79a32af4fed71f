"""Journaled containers: undo a failed tool call without copying the state.

Each episode's state is held in `JDict` / `JList` (subclasses of dict and list) that belong to the
episode's `Journal`. While a call runs, every mutation first appends an undo entry to that journal;
`rollback()` replays those entries in reverse, `commit()` drops them. A plain dict or list that the call
inserted into the state is converted to journaled containers when the call commits (not at insertion
time, so code that keeps mutating a record it has just inserted behaves exactly as with plain containers).

Undo entries are written before the mutation they undo, after the checks that could make the
mutation fail, and are idempotent, so an interruption between the two (a timeout signal) still
rolls back correctly. Calls on one journal must not overlap: the server runs environment code serially.
Only exact `dict` and `list` values are journaled; sets, tuples of lists or custom objects stored
in the state are not (a state is JSON, so they should not be there).
"""

from __future__ import annotations

import copy
from typing import Any

_MISSING = object()
JOURNAL_SLOT = "_envscaler_journal"  # where an environment instance keeps its journal (a slot, not state)


class Journal:
    """The undo log of one episode's state: `wrap` the state into it, then `begin` / `commit` / `rollback` calls."""

    __slots__ = ("log", "touched")

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] | None = None
        self.touched: list[tuple[Any, Any]] | None = None

    def wrap(self, value: Any, memo: dict[int, Any] | None = None) -> Any:
        """Return `value` with every plain dict/list (recursively) replaced by one journaled here.

        Journaled containers met on the way are kept as they are (their content is already journaled);
        a state handed over whole from another journal is copied first. `memo` keeps shared plain
        containers shared.
        """
        t = type(value)
        if t is not dict and t is not list:
            if (t is JDict or t is JList) and value._journal is not self:
                value = copy.deepcopy(value)  # plain containers all the way down (JDict/JList.__deepcopy__)
                t = type(value)
            else:
                return value
        if memo is None:
            memo = {}
        key = id(value)
        done = memo.get(key)
        if done is not None:
            return done
        if t is dict:
            new_d = JDict()
            new_d._journal = self
            dict.update(new_d, value)  # every item copied at C speed, then only the containers replaced (same order)
            memo[key] = new_d
            for k, v in value.items():
                tv = type(v)
                if tv is dict or tv is list:
                    dict.__setitem__(new_d, k, self.wrap(v, memo))
            return new_d
        new_l = JList()
        new_l._journal = self
        memo[key] = new_l
        list.extend(new_l, [self.wrap(v, memo) if type(v) is dict or type(v) is list else v for v in value])
        return new_l

    def instance(self, cls: Any, *args: Any) -> Any:
        """A new instance of `cls` (a `journaled_class`) whose top-level attribute changes go to this journal."""
        obj = cls.__new__(cls)
        if hasattr(cls, JOURNAL_SLOT):
            object.__setattr__(obj, JOURNAL_SLOT, self)
        obj.__init__(*args)
        return obj

    def begin(self) -> None:
        """Start journaling one call. Raises RuntimeError if a call is already being journaled."""
        if self.log is not None:
            raise RuntimeError("a journaled call is already running; environment calls must not overlap")
        self.log = []
        self.touched = []

    def active(self) -> bool:
        """True while a call is being journaled."""
        return self.log is not None

    def commit(self) -> int:
        """End the call keeping its changes; convert plain containers it inserted. Returns the entry count."""
        log, touched = self.log, self.touched
        self.log = self.touched = None
        if touched:
            self._seal(touched)
        return len(log or ())

    def rollback(self) -> int:
        """End the call undoing every change it made, newest first. Returns the number of entries undone."""
        log = self.log
        self.log = self.touched = None
        if not log:
            return 0
        for entry in reversed(log):
            entry[0](*entry[1:])
        return len(log)

    def _seal(self, touched: list[tuple[Any, Any]]) -> None:
        memo: dict[int, Any] = {}
        seen: set[tuple[int, Any]] = set()
        for container, key in touched:
            mark = (id(container), key if type(container) is JDict else None)
            if mark in seen:
                continue
            seen.add(mark)
            if type(container) is JDict:
                v = dict.get(container, key, _MISSING)
                if type(v) is dict or type(v) is list:
                    dict.__setitem__(container, key, self.wrap(v, memo))
            elif type(container) is JList:
                for i, v in enumerate(container):
                    if type(v) is dict or type(v) is list:
                        list.__setitem__(container, i, self.wrap(v, memo))
            else:  # an environment instance: key is the attribute name
                v = container.__dict__.get(key, _MISSING)
                if type(v) is dict or type(v) is list:
                    object.__setattr__(container, key, self.wrap(v, memo))


def _plain(v: Any) -> bool:
    t = type(v)
    return t is dict or t is list


# ---- undo operations (called with the log switched off) ----

def _undo_dict_set(d: dict[Any, Any], k: Any, old: Any) -> None:
    if old is _MISSING:
        dict.pop(d, k, None)
    else:
        dict.__setitem__(d, k, old)


def _undo_dict_del(d: dict[Any, Any], k: Any, old: Any, keys: list[Any] | None) -> None:
    if k in d and dict.__getitem__(d, k) is old:
        return  # the deletion never happened
    if keys is None or keys[-1] == k:
        dict.__setitem__(d, k, old)
        return
    items = dict(d)
    items[k] = old
    dict.clear(d)
    for key in keys:
        if key in items:
            dict.__setitem__(d, key, items[key])


def _undo_dict_restore(d: dict[Any, Any], items: dict[Any, Any]) -> None:
    dict.clear(d)
    dict.update(d, items)


def _undo_list_truncate(lst: list[Any], length: int) -> None:
    list.__delitem__(lst, slice(length, None))


def _undo_list_insert_at(lst: list[Any], i: int, length: int) -> None:
    if len(lst) > length:
        list.__delitem__(lst, i)


def _undo_list_removed(lst: list[Any], i: int, old: Any, length: int) -> None:
    if len(lst) < length:
        list.insert(lst, i, old)


def _undo_list_set(lst: list[Any], i: int, old: Any) -> None:
    list.__setitem__(lst, i, old)


def _undo_list_restore(lst: list[Any], items: list[Any]) -> None:
    list.__setitem__(lst, slice(None), items)


def _undo_attr(obj: Any, name: str, old: Any) -> None:
    if old is _MISSING:
        obj.__dict__.pop(name, None)
    else:
        object.__setattr__(obj, name, old)


class JDict(dict[Any, Any]):
    """A dict that records undo entries for its mutations while a call is journaled."""

    __slots__ = ("_journal",)
    _journal: Journal

    def __setitem__(self, k: Any, v: Any) -> None:
        j = self._journal
        if j.log is not None:
            j.log.append((_undo_dict_set, self, k, dict.get(self, k, _MISSING)))
            if _plain(v):
                j.touched.append((self, k))  # type: ignore[union-attr]
        dict.__setitem__(self, k, v)

    def __delitem__(self, k: Any) -> None:
        log = self._journal.log
        if log is not None:
            old = dict.__getitem__(self, k)
            log.append((_undo_dict_del, self, k, old, self._order_for(k)))
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
            log.append((_undo_dict_del, self, k, old, self._order_for(k)))
        return dict.pop(self, k, *default)

    def popitem(self) -> tuple[Any, Any]:
        log = self._journal.log
        if log is not None and dict.__len__(self):
            k = next(reversed(dict.keys(self)))
            log.append((_undo_dict_del, self, k, dict.__getitem__(self, k), None))
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
            log.append((_undo_dict_restore, self, dict(self)))
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


class JList(list[Any]):
    """A list that records undo entries for its mutations while a call is journaled."""

    __slots__ = ("_journal",)
    _journal: Journal

    def _snapshot(self) -> None:
        j = self._journal
        j.log.append((_undo_list_restore, self, list(self)))  # type: ignore[union-attr]
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
                log.append((_undo_list_set, self, j, list.__getitem__(self, j)))
                if _plain(v):
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
                log.append((_undo_list_removed, self, j, list.__getitem__(self, j), n))
        list.__delitem__(self, i)

    def append(self, v: Any) -> None:
        j = self._journal
        if j.log is not None:
            j.log.append((_undo_list_truncate, self, len(self)))
            if _plain(v):
                j.touched.append((self, None))  # type: ignore[union-attr]
        list.append(self, v)

    def extend(self, values: Any) -> None:
        j = self._journal
        if j.log is not None:
            values = list(values)
            j.log.append((_undo_list_truncate, self, len(self)))
            if any(_plain(v) for v in values):
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
            log.append((_undo_list_insert_at, self, j, n))
            if _plain(v):
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
            log.append((_undo_list_removed, self, j, list.__getitem__(self, j), n))
        return list.pop(self, i)

    def remove(self, v: Any) -> None:
        log = self._journal.log
        if log is not None:
            j = list.index(self, v)
            log.append((_undo_list_removed, self, j, list.__getitem__(self, j), len(self)))
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


def journaled_setattr(self: Any, name: str, value: Any) -> None:
    """`__setattr__` for environment instances: journal top-level attribute rebinds."""
    j: Journal | None = getattr(self, JOURNAL_SLOT, None)
    if j is not None and j.log is not None:
        j.log.append((_undo_attr, self, name, self.__dict__.get(name, _MISSING)))
        if _plain(value):
            j.touched.append((self, name))  # type: ignore[union-attr]
    object.__setattr__(self, name, value)


def journaled_delattr(self: Any, name: str) -> None:
    """`__delattr__` for environment instances: journal top-level attribute deletions."""
    j: Journal | None = getattr(self, JOURNAL_SLOT, None)
    if j is not None and j.log is not None and name in self.__dict__:
        j.log.append((_undo_attr, self, name, self.__dict__[name]))
    object.__delattr__(self, name)


def journaled_class(cls: type) -> type:
    """A subclass of the environment class whose instances journal top-level attribute changes.

    Its instances keep their journal in a slot (create them with `Journal.instance`), out of `__dict__`.
    """
    return type(cls.__name__, (cls,), {
        "__slots__": (JOURNAL_SLOT,),
        "__setattr__": journaled_setattr,
        "__delattr__": journaled_delattr,
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
    })
