"""Content matching of records for the state check: added records are paired by what they hold, not their key.

Keys of new records are usually generated (the next free order number), so an agent that places two orders
in the other order than the reference holds the same records under swapped keys. For every dict to which both
the reference and the agent added records:

1. each added record is normalised: free fields dropped, every string equal to a key generated on that side
   replaced by a placeholder naming the dict it was generated in, floats rounded;
2. records equal after normalisation are paired (as a multiset), then leftovers with the same key, then
   leftovers by most equal fields (at least one);
3. the agent's paired keys are renamed to the reference's everywhere in the agent's state (dict keys and
   string values), so the path-by-path comparison that follows sees the same keys.

Only records (dict or list values) are paired by content; a scalar under a new key is compared by key. Keys in
`fixed_keys` (named by the task) are never renamed, and strings already present in the initial state are not
treated as generated keys.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from envscaler_mcp.compare.diff import PathPart, format_path
from envscaler_mcp.compare.freefields import FreeFields

Side = Literal["reference", "agent"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Marks a path that does not exist in a state (distinct from JSON null)."""


def is_number(value: Any) -> bool:
    """int or float, not bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _close(a: Any, b: Any) -> bool:
    """Python's == with numbers within 1e-9: enough to decide where to look (pairing, descending), never what to
    report (`same`)."""
    if is_number(a) and is_number(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return type(a) is type(b) and a == b


def same(a: Any, b: Any) -> bool:
    """JSON equality: numbers within 1e-9 (so 24 == 24.0 and float sums in another order agree), true != 1.

    Containers that Python calls equal are also compared as JSON text: Python's == takes True for 1 anywhere
    inside them, JSON does not (a container holding 24 on one side and 24.0 on the other is then not `same`, and
    the walk compares it element by element, where the numbers agree)."""
    if a is b:
        return True
    if is_number(a) and is_number(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if type(a) is not type(b) or a != b:
        return False
    return not isinstance(a, dict | list) or canonical(a) == canonical(b)


def canonical(value: Any) -> str:
    """A string equal for equal normalised values (sorted keys); a comparison key, never shown."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


class Normalizer:
    """Normalised copies of values: free fields dropped, generated keys replaced, floats rounded."""

    def __init__(self, free: FreeFields) -> None:
        self.free = free
        self.generated: dict[Side, dict[str, str]] = {"reference": {}, "agent": {}}

    def value(self, value: Any, path: list[PathPart], side: Side, drop_free: bool = True) -> Any:
        """The normalised copy of `value`, found at `path` on `side` (with its free fields unless `drop_free`)."""
        drop = drop_free and bool(self.free)
        if isinstance(value, dict):
            return {k: self.value(v, [*path, k], side, drop_free) for k, v in value.items()
                    if not drop or self.free.reason([*path, k]) is None}
        if isinstance(value, list):
            return [self.value(v, [*path, n], side, drop_free) for n, v in enumerate(value)
                    if not drop or self.free.reason([*path, n]) is None]
        if isinstance(value, str):
            return self.generated[side].get(value, value)
        if isinstance(value, float):
            rounded = round(value, 9)
            return int(rounded) if rounded.is_integer() else rounded
        return value


def score_fields(r: Any, a: Any) -> int:
    """How many top-level fields two normalised records share (0 unless both are dicts)."""
    if not (isinstance(r, dict) and isinstance(a, dict)):
        return 0
    return sum(1 for k, v in r.items() if k in a and _close(v, a[k]))


def _containers(i: Any, r: Any, a: Any, path: list[PathPart], out: list[tuple[list[PathPart], list[str], list[str]]]
                ) -> None:
    if not (isinstance(i, dict) and isinstance(r, dict) and isinstance(a, dict)):
        return
    new_r = [k for k in r if k not in i]
    new_a = [k for k in a if k not in i]
    if new_r or new_a:
        out.append((path, new_r, new_a))
    for key, before in i.items():
        if key in r and key in a and not (_close(before, r[key]) and _close(before, a[key])):
            _containers(before, r[key], a[key], [*path, key], out)


def strings_in(value: Any, out: set[str] | None = None) -> set[str]:
    """Every string inside a JSON value (dict values and list items, at any depth), added to `out`."""
    out = set() if out is None else out
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for v in value.values():
            strings_in(v, out)
    elif isinstance(value, list):
        for v in value:
            strings_in(v, out)
    return out


def _pair_container(path: list[PathPart], r: dict[str, Any], a: dict[str, Any], new_r: list[str],
                    new_a: list[str], norm: Normalizer, fixed: set[str]) -> dict[str, str]:
    """agent key -> reference key for the records both sides added under one dict."""
    pairs: dict[str, str] = {}
    left_r = [k for k in new_r if k not in fixed and isinstance(r[k], dict | list)]
    left_a = [k for k in new_a if k not in fixed and isinstance(a[k], dict | list)]
    norm_r = {k: norm.value(r[k], [*path, k], "reference") for k in left_r}
    norm_a = {k: norm.value(a[k], [*path, k], "agent") for k in left_a}
    by_content: dict[str, list[str]] = {}
    for k in left_a:
        by_content.setdefault(canonical(norm_a[k]), []).append(k)
    for k in list(left_r):  # 1. equal content
        bucket = by_content.get(canonical(norm_r[k]))
        if bucket:
            ak = k if k in bucket else bucket[0]
            bucket.remove(ak)
            pairs[ak] = k
            left_r.remove(k)
            left_a.remove(ak)
    for k in list(left_r):  # 2. same key
        if k in left_a:
            pairs[k] = k
            left_r.remove(k)
            left_a.remove(k)
    scored = sorted(((score_fields(norm_r[rk], norm_a[ak]), ri, ai) for ri, rk in enumerate(left_r)
                     for ai, ak in enumerate(left_a)), key=lambda t: (-t[0], t[1], t[2]))
    used_r: set[int] = set()
    used_a: set[int] = set()
    for score, ri, ai in scored:  # 3. most equal fields
        if score > 0 and ri not in used_r and ai not in used_a:
            used_r.add(ri)
            used_a.add(ai)
            pairs[left_a[ai]] = left_r[ri]
    return pairs


def pair_added(initial: Any, reference: Any, agent: Any, norm: Normalizer, fixed: set[str]
               ) -> tuple[dict[str, str], set[str], set[str]]:
    """(renames of the agent's keys, every generated key of either side, the strings of the initial state);
    fills `norm`'s placeholders."""
    containers: list[tuple[list[PathPart], list[str], list[str]]] = []
    _containers(initial, reference, agent, [], containers)
    if not containers:
        return {}, set(), set()
    existing = strings_in(initial, set())
    for path, new_r, new_a in containers:
        mark = "\x00new " + format_path(path)
        for side, keys in (("reference", new_r), ("agent", new_a)):
            for key in keys:
                if key not in fixed and key not in existing:
                    norm.generated[side].setdefault(key, mark)  # type: ignore[index]
    renames: dict[str, str] = {}
    for path, new_r, new_a in containers:
        if not (new_r and new_a):
            continue
        r, a = _at(reference, path), _at(agent, path)
        for ak, rk in _pair_container(path, r, a, new_r, new_a, norm, fixed).items():
            if ak != rk:
                renames.setdefault(ak, rk)
        taken = set(renames.values())
        for ak in new_a:  # an unpaired agent key that a rename would collide with moves aside
            if ak in taken and ak not in renames:
                renames[ak] = f"{ak} (agent)"
    generated = set(norm.generated["reference"]) | set(norm.generated["agent"])
    return renames, generated, existing


def _at(state: Any, path: list[PathPart]) -> Any:
    for part in path:
        state = state[part]
    return state


def rename(value: Any, renames: dict[str, str], keep: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    """A copy of `value` with dict keys and string values renamed (string values in `keep` stay)."""
    if isinstance(value, dict):
        return {renames.get(k, k): rename(v, renames, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [rename(v, renames, keep) for v in value]
    if isinstance(value, str) and value not in keep:
        return renames.get(value, value)
    return value
