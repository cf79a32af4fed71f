"""The state check: the agent's final state against the reference solution's, relative to the initial state.

`compare_states(initial, reference, agent, free)` walks the three states together:

* a path the reference left at its initial value that the agent changed is **collateral** (an agent-added
  record or element that has no counterpart is **extra**);
* a path the reference changed whose value differs in the agent's state is a **mismatch** (**missing** when
  the agent lacks a record the reference added), unless the path is a free field (free text, generated
  timestamps: `compare.freefields`). A free field is only free where the reference changed its record: the
  agent writing a note on a record the reference never touched is still collateral;
* records both sides added to the same dict are paired by **content**, not key (keys are often generated:
  two orders placed in the other order are no mismatch); the agent's keys are then renamed to the
  reference's everywhere (keys and string values) before the path-by-path comparison;
* lists compare as multisets: elements that differ only in order are equal.

Pure: no I/O, JSON values in, a StateCheck out.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, Field

from envscaler_mcp.compare.diff import PathPart, format_path
from envscaler_mcp.compare.freefields import FreeFields, literal_pattern
from envscaler_mcp.compare.matching import (
    MISSING,
    Normalizer,
    Side,
    canonical,
    pair_added,
    rename,
    same,
    score_fields,
)

ChangeKind = Literal["collateral", "mismatch", "missing", "extra"]
StateCheckStatus = Literal["pass", "fail", "not_available"]


class UnexpectedChange(BaseModel):
    """One way the agent's final state differs from the reference solution's."""

    path: str = Field(description="Where, e.g. 'orders.O-10058.items[0].quantity' (reference keys and indexes).")
    kind: ChangeKind = Field(
        description="'collateral': the agent changed what the reference left alone (or removed it); 'extra': "
        "the agent added a record or element with no counterpart; 'mismatch': the reference changed it and "
        "the agent's value differs; 'missing': the reference added it and the agent did not."
    )
    expected: Any = Field(None, description="Value in the reference final state (= the initial one for collateral).")
    actual: Any = Field(None, description="Value in the agent's final state.")
    detail: str = Field("", description="What is absent, when a value is absent rather than null.")

    def describe(self) -> str:
        """One line for people: 'orders.O1.status: expected "cancelled", got "pending"'."""
        exp, act = _short(self.expected), _short(self.actual)
        if self.kind == "missing":
            return f"{self.path}: missing (the reference has {exp})"
        if self.kind == "extra":
            return f"{self.path}: extra, not in the reference ({act})"
        if self.kind == "collateral":
            if self.detail:
                return f"{self.path}: {self.detail} (the reference left it as {exp})"
            return f"{self.path}: changed to {act}, the reference left it as {exp}"
        if self.detail:
            return f"{self.path}: {self.detail} (the agent has {act})"
        return f"{self.path}: expected {exp}, got {act}"


class StateCheck(BaseModel):
    """Outcome of compare_states."""

    passed: bool = Field(description="No unexpected change.")
    changes: list[UnexpectedChange] = Field(default_factory=list, description="Every unexpected change, in order.")
    ignored: list[str] = Field(default_factory=list, description="Free-field paths whose values differ.")


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


Found = tuple[list[PathPart], ChangeKind, Any, Any, str]  # path, kind, expected, actual (MISSING if absent), detail
Element = tuple[int, Any, Any, str, str]  # index, value, normalised value, its canonical text, same with free fields


class _Walk:
    """One three-way comparison (initial, reference, renamed agent state)."""

    def __init__(self, free: FreeFields, norm: Normalizer) -> None:
        self.free = free
        self.norm = norm
        self.found: list[Found] = []
        self.ignored: list[str] = []

    def node(self, path: list[PathPart], i: Any, r: Any, a: Any, parent_touched: bool) -> None:
        if same(r, a):
            return
        if path and (parent_touched or not same(i, r)) and self.free.reason(path) is not None:
            self.ignored.append(format_path(path))
            return
        if isinstance(r, dict) and isinstance(a, dict):
            base = i if isinstance(i, dict) else {}
            touched = not same(i, r)
            for key in [*r, *(k for k in a if k not in r)]:
                self.node([*path, key], base.get(key, MISSING), r.get(key, MISSING), a.get(key, MISSING), touched)
        elif isinstance(r, list) and isinstance(a, list):
            self.sequence(path, i if isinstance(i, list) else [], r, a)
        else:
            self.leaf(path, i, r, a)

    def leaf(self, path: list[PathPart], i: Any, r: Any, a: Any) -> None:
        if same(i, r):  # the reference left it alone (or neither side had it)
            if i is MISSING:
                self.found.append((path, "extra", MISSING, a, ""))
            else:
                self.found.append((path, "collateral", r, a, "removed" if a is MISSING else ""))
        elif a is MISSING:
            self.found.append((path, "missing", r, MISSING, ""))
        elif r is MISSING:
            self.found.append((path, "mismatch", MISSING, a, "the reference removed it"))
        else:
            self.found.append((path, "mismatch", r, a, ""))

    def _elements(self, path: list[PathPart], values: list[Any], side: Side) -> list[Element]:
        out = []
        for n, v in enumerate(values):
            normal = self.norm.value(v, [*path, n], side)
            text = canonical(normal)
            exact = canonical(self.norm.value(v, [*path, n], side, drop_free=False)) if self.free else text
            out.append((n, v, normal, text, exact))
        return out

    def sequence(self, path: list[PathPart], i: list[Any], r: list[Any], a: list[Any]) -> None:
        """Lists as multisets; leftovers are paired by most equal fields and compared element by element."""
        els_r, els_a = self._elements(path, r, "reference"), self._elements(path, a, "agent")
        count_r, count_a = Counter(e[3] for e in els_r), Counter(e[3] for e in els_a)
        if count_r == count_a:
            return
        if self.free:  # equal elements first, then elements equal but for free fields
            exact_r, exact_a = Counter(e[4] for e in els_r), Counter(e[4] for e in els_a)
            els_r = [e for e in els_r if not _take(exact_a, e[4])]
            els_a = [e for e in els_a if not _take(exact_r, e[4])]
            count_r, count_a = Counter(e[3] for e in els_r), Counter(e[3] for e in els_a)
        left_r = [e for e in els_r if not _take(count_a, e[3])]
        left_a = [e for e in els_a if not _take(count_r, e[3])]
        initial = Counter(e[4] for e in self._elements(path, i, "reference"))
        touched = not same(i, r)
        pairs = _pair_by_fields(left_r, left_a)
        paired_a = {e[0] for _, e in pairs}
        paired = {re[0]: ae for re, ae in pairs}
        for rn, rv, _, _, rc in left_r:
            before = rv if _take(initial, rc) else MISSING
            if rn in paired:
                self.node([*path, rn], before, rv, paired[rn][1], touched)
            else:
                self.leaf([*path, rn], before, rv, MISSING)
        for an, av, _, _, ac in left_a:
            if an not in paired_a:
                kept = _take(initial, ac)  # the reference removed an initial element the agent kept
                self.found.append(([*path, an], "mismatch" if kept else "extra", MISSING, av,
                                   "the reference removed it" if kept else ""))


def _take(counter: Counter[str], key: str) -> bool:
    if counter[key] > 0:
        counter[key] -= 1
        return True
    return False


def _pair_by_fields(left_r: list[Element], left_a: list[Element]) -> list[tuple[Element, Element]]:
    """Greedy pairs of leftover elements, most equal top-level fields first (at least one equal field)."""
    scored = sorted(((score_fields(r[2], a[2]), ri, ai) for ri, r in enumerate(left_r)
                     for ai, a in enumerate(left_a)), key=lambda t: (-t[0], t[1], t[2]))
    used_r: set[int] = set()
    used_a: set[int] = set()
    pairs = []
    for score, ri, ai in scored:
        if score > 0 and ri not in used_r and ai not in used_a:
            used_r.add(ri)
            used_a.add(ai)
            pairs.append((left_r[ri], left_a[ai]))
    return pairs


def _compare(initial: Any, reference: Any, agent: Any, free: FreeFields, fixed_keys: Collection[str]
             ) -> tuple[_Walk, set[str]]:
    norm = Normalizer(free)
    renames, generated, existing = pair_added(initial, reference, agent, norm, set(fixed_keys))
    walk = _Walk(free, norm)
    walk.node([], initial, reference, rename(agent, renames, existing) if renames else agent, True)
    return walk, generated


def _plain(value: Any) -> Any:
    return None if value is MISSING else value


def compare_states(initial: Any, reference: Any, agent: Any, free: FreeFields | None = None,
                   fixed_keys: Collection[str] = ()) -> StateCheck:
    """Compare the agent's final state with the reference's (see the module docstring).

    `fixed_keys` are keys the task itself names (strings in the reference solution's arguments): a record the
    reference added under such a key is matched by key only, never renamed.
    """
    walk, _ = _compare(initial, reference, agent, free or FreeFields(), fixed_keys)
    changes = [UnexpectedChange(path=format_path(p), kind=k, expected=_plain(e), actual=_plain(a), detail=d)
               for p, k, e, a, d in walk.found]
    return StateCheck(passed=not changes, changes=changes, ignored=walk.ignored)


def nondeterministic_fields(initial: Any, first: Any, second: Any, free: FreeFields | None = None
                            ) -> tuple[list[tuple[str, str]], list[str]]:
    """Fields whose values differ between two replays of the same solution: (free patterns with their reason,
    problems). Records present after one replay and not the other are problems, not free fields."""
    walk, generated = _compare(initial, first, second, free or FreeFields(), ())
    patterns: dict[str, str] = {}
    problems: list[str] = []
    for path, kind, expected, actual, _ in walk.found:
        if kind == "mismatch" and expected is not MISSING and actual is not MISSING:
            patterns.setdefault(literal_pattern(path, generated), "differs between two replays of the reference")
        else:
            problems.append(f"{format_path(path)} is {kind} in a second replay of the reference")
    return list(patterns.items()), problems
