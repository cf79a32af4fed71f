"""The undo journal of one episode: undo a failed tool call without copying the state.

Each episode's state is held in `JDict` / `JList` (subclasses of dict and list, containers.py) that belong to
the episode's `Journal`, and its environment instance is of a `journaled_class` that reports top-level
attribute changes to the same journal. While a call runs, every mutation first appends an undo entry to that
journal; `rollback()` replays those entries (undo.py) in reverse, `commit()` drops them. A plain dict or list
that the call inserted into the state is converted to journaled containers when the call commits (not at
insertion time, so code that keeps mutating a record it has just inserted behaves exactly as with plain
containers).

Undo entries are written before the mutation they undo, after the checks that could make the
mutation fail, and are idempotent, so an interruption between the two (a timeout signal) still
rolls back correctly. Calls on one journal must not overlap: the server runs environment code serially.
Only exact `dict` and `list` values are journaled; sets, tuples of lists or custom objects stored
in the state are not (a state is JSON, so they should not be there).
"""

from __future__ import annotations

import copy

from .containers import JDict, JList
from .undo import MISSING, is_plain, undo_attr

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any

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
                v = dict.get(container, key, MISSING)
                if type(v) is dict or type(v) is list:
                    dict.__setitem__(container, key, self.wrap(v, memo))
            elif type(container) is JList:
                for i, v in enumerate(container):
                    if type(v) is dict or type(v) is list:
                        list.__setitem__(container, i, self.wrap(v, memo))
            else:  # an environment instance: key is the attribute name
                v = container.__dict__.get(key, MISSING)
                if type(v) is dict or type(v) is list:
                    object.__setattr__(container, key, self.wrap(v, memo))


def journaled_setattr(self: Any, name: str, value: Any) -> None:
    """`__setattr__` for environment instances: journal top-level attribute rebinds."""
    j: Journal | None = getattr(self, JOURNAL_SLOT, None)
    if j is not None and j.log is not None:
        j.log.append((undo_attr, self, name, self.__dict__.get(name, MISSING)))
        if is_plain(value):
            j.touched.append((self, name))  # type: ignore[union-attr]
    object.__setattr__(self, name, value)


def journaled_delattr(self: Any, name: str) -> None:
    """`__delattr__` for environment instances: journal top-level attribute deletions."""
    j: Journal | None = getattr(self, JOURNAL_SLOT, None)
    if j is not None and j.log is not None and name in self.__dict__:
        j.log.append((undo_attr, self, name, self.__dict__[name]))
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
