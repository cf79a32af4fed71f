"""The undo entries of the journal: each undoes one mutation of a journaled container or instance attribute.

An entry is `(operation, *arguments)`; `Journal.rollback` calls them newest first. Each operation works on the
container with the base class's own methods (so it records nothing) and is idempotent: an interruption (a
timeout signal) between writing an entry and the mutation it undoes still rolls back correctly.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any

MISSING = object()  # no value was there before (a new key or attribute)


def is_plain(v: Any) -> bool:
    """An exact dict or list: a value the journal converts when the call that stored it commits."""
    t = type(v)
    return t is dict or t is list


def undo_dict_set(d: dict[Any, Any], k: Any, old: Any) -> None:
    if old is MISSING:
        dict.pop(d, k, None)
    else:
        dict.__setitem__(d, k, old)


def undo_dict_del(d: dict[Any, Any], k: Any, old: Any, keys: list[Any] | None) -> None:
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


def undo_dict_restore(d: dict[Any, Any], items: dict[Any, Any]) -> None:
    dict.clear(d)
    dict.update(d, items)


def undo_list_truncate(lst: list[Any], length: int) -> None:
    list.__delitem__(lst, slice(length, None))


def undo_list_insert_at(lst: list[Any], i: int, length: int) -> None:
    if len(lst) > length:
        list.__delitem__(lst, i)


def undo_list_removed(lst: list[Any], i: int, old: Any, length: int) -> None:
    if len(lst) < length:
        list.insert(lst, i, old)


def undo_list_set(lst: list[Any], i: int, old: Any) -> None:
    list.__setitem__(lst, i, old)


def undo_list_restore(lst: list[Any], items: list[Any]) -> None:
    list.__setitem__(lst, slice(None), items)


def undo_attr(obj: Any, name: str, old: Any) -> None:
    if old is MISSING:
        obj.__dict__.pop(name, None)
    else:
        object.__setattr__(obj, name, old)
