"""Structural diff of two JSON states: which paths were added, removed or changed.

Unlike EnvScaler's diff (dicts only; a list that grew shows up as one whole old/new pair) this recurses into
lists element by element: lists are aligned at the start (edits in place, appends, pops at the end) or, when
that matches more elements, at the end (inserts or deletes at the front). Equal subtrees are skipped with one
C-level `==`, so diffing two 1 MB states with a few changes costs about one comparison pass (~6 ms).
Because of that shortcut, containers that Python finds equal are equal here too (`[1] == [True]`); leaves
of different JSON types (`true` vs `1`) are reported as changed.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSON, JSONObject

PathPart = str | int


class StateChange(BaseModel):
    """One difference between an old and a new state."""

    path: list[PathPart] = Field(description="Keys (str) and list indexes (int) from the state root.")
    op: Literal["added", "removed", "changed"] = Field(description="What happened at the path.")
    old: JSON = Field(None, description="Value before (None for 'added').")
    new: JSON = Field(None, description="Value after (None for 'removed').")

    def path_str(self) -> str:
        """The path as text, e.g. `orders.O1.items[2].qty`."""
        return format_path(self.path)


def format_path(path: list[PathPart]) -> str:
    """Render a path as `a.b[2].c` (keys that are not plain words are quoted: `a["x y"]`)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out or "(root)"


def diff_states(old: JSON, new: JSON, ignore_keys: Collection[str] = ()) -> list[StateChange]:
    """All differences from `old` to `new`, in a stable order (dict keys of `old` first, then new keys).

    `ignore_keys` names top-level keys to leave out (e.g. a clock attribute).
    """
    changes: list[StateChange] = []
    if isinstance(old, dict) and isinstance(new, dict) and ignore_keys:
        old = {k: v for k, v in old.items() if k not in ignore_keys}
        new = {k: v for k, v in new.items() if k not in ignore_keys}
    _diff(old, new, [], changes)
    return changes


def _same(a: Any, b: Any) -> bool:
    # `True == 1` in Python, but a JSON state changing true -> 1 is a change.
    return a is b or (type(a) is type(b) and a == b)


def _diff(old: Any, new: Any, path: list[PathPart], out: list[StateChange]) -> None:
    if _same(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            if key not in new:
                out.append(StateChange(path=[*path, key], op="removed", old=value))
            else:
                _diff(value, new[key], [*path, key], out)
        for key, value in new.items():
            if key not in old:
                out.append(StateChange(path=[*path, key], op="added", new=value))
        return
    if isinstance(old, list) and isinstance(new, list):
        _diff_lists(old, new, path, out)
        return
    out.append(StateChange(path=path, op="changed", old=old, new=new))


def _diff_lists(old: list[Any], new: list[Any], path: list[PathPart], out: list[StateChange]) -> None:
    n_old, n_new = len(old), len(new)
    common = min(n_old, n_new)
    # align the ends when more elements are equal counted from the end than from the front (a tie: the
    # list grew or shrank at its end); with no extra element both alignments are the same
    head = sum(1 for i in range(common) if _same(old[i], new[i]))
    tail = sum(1 for i in range(1, common + 1) if _same(old[-i], new[-i]))
    if tail > head:  # the extra elements sit at the front
        extra_old, extra_new = n_old - common, n_new - common
        for i in range(extra_old):
            out.append(StateChange(path=[*path, i], op="removed", old=old[i]))
        for i in range(extra_new):
            out.append(StateChange(path=[*path, i], op="added", new=new[i]))
        for i in range(common):
            _diff(old[extra_old + i], new[extra_new + i], [*path, extra_new + i], out)
        return
    for i in range(common):
        _diff(old[i], new[i], [*path, i], out)
    for i in range(common, n_old):
        out.append(StateChange(path=[*path, i], op="removed", old=old[i]))
    for i in range(common, n_new):
        out.append(StateChange(path=[*path, i], op="added", new=new[i]))


def state_diff(old: JSON, new: JSON, ignore_keys: Collection[str] = ()) -> JSONObject:
    """The diff in EnvScaler's nested shape: keys down to each change, list indexes as "[i]" keys, and leaves
    `{"added": v}`, `{"removed": v}` or `{"changed": {"old": a, "new": b}}`. A change at the root is
    returned as the leaf itself.
    """
    nested: dict[str, Any] = {}
    for change in diff_states(old, new, ignore_keys):
        if change.op == "changed":
            leaf: dict[str, Any] = {"changed": {"old": change.old, "new": change.new}}
        else:
            leaf = {change.op: change.new if change.op == "added" else change.old}
        if not change.path:
            return leaf
        node = nested
        keys = [f"[{p}]" if isinstance(p, int) else p for p in change.path]
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = leaf
    return nested
