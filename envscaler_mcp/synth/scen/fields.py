"""What a validator reads from a state: top-level keys the state lacks, and fields its records lack.

A small model writes a validator for "Has ticket T-10001 assignee 'AG-3'?" as
`final_state['tickets']['T-10001']['assignee'] == 'AG-3'` on a state whose tickets have no assignee; it raises
KeyError on the initial state, and the gate finds it only after the plan and the repairs are paid for. Here the
reads that can be seen statically (a field of a record reached by subscripts or `.get` from the state, directly
or through a name assigned once, or a loop over a collection's records) are compared with the fields the
collection's records have and the names the environment's code writes; a field neither has is refused with the
record's real fields. Anything less clear (a computed key, a record passed around) is left to the gate.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Collection, Sequence

from envscaler_mcp._json import State
from envscaler_mcp.synth.scen.anchors import records

_STATE, _COLLECTION, _RECORD = "state", "collection", "record"
Kind = tuple[str, str]  # (what an expression holds, the collection it belongs to: "" for the state)


def record_fields(state: State, collection: str) -> set[str]:
    """Every field of the records of one collection (a dict of records keyed by id, or a list of records)."""
    value = state.get(collection)
    found = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return {key for record in found if isinstance(record, dict) for key in record}


def _key(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def validator_tree(source: str) -> tuple[ast.Module, set[str]] | None:
    """A validator's syntax tree and the names that hold a state in it (`final_state`, `initial_state` and
    check_func's own parameter), or None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = {"final_state", "initial_state"}
    names |= {a.arg for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check_func"
              for a in n.args.args[:1]}
    return tree, names


def unknown_state_keys(source: str, keys: Collection[str]) -> list[str]:
    """Top-level keys a validator reads from the state (`final_state["x"]`, `initial_state.get("x")`, with
    check_func's own parameter name too) that the state does not have. [] when the source does not parse."""
    parsed = validator_tree(source)
    if parsed is None:
        return []
    tree, names = parsed
    read: list[str] = []
    for node in ast.walk(tree):
        key: ast.expr | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in names:
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and isinstance(node.func.value, ast.Name) and node.func.value.id in names and node.args):
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value not in keys:
            read.append(key.value)
    return sorted(set(read))


class _Reads:
    """Walks one validator: the kinds of its names, and the (collection, field) pairs it reads."""

    def __init__(self, state: State, params: set[str]) -> None:
        self.state = state
        self.names: dict[str, Kind] = {name: (_STATE, "") for name in params}
        self.read: list[tuple[str, str]] = []

    def kind(self, node: ast.expr) -> Kind | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Subscript):
            return self._step(self.kind(node.value), node.slice)
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and node.args):
            return self._step(self.kind(node.func.value), node.args[0])
        return None

    def _step(self, outer: Kind | None, key: ast.expr) -> Kind | None:
        if outer is None:
            return None
        what, collection = outer
        if what == _STATE:
            name = _key(key)
            fields = record_fields(self.state, name) if name is not None else set()
            return (_COLLECTION, name) if name is not None and fields else None
        if what == _COLLECTION:
            return (_RECORD, collection)
        field = _key(key)
        if field is not None:
            self.read.append((collection, field))
        return None

    def iterated(self, node: ast.expr) -> str | None:
        """The collection whose records iterating `node` gives (a dict collection's `.values()`, or a list
        collection itself), or None."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "values"
                and not node.args):
            inner, values = node.func.value, True
        else:
            inner, values = node, False
        kind = self.kind(inner)
        if kind is None or kind[0] != _COLLECTION:
            return None
        return kind[1] if isinstance(self.state.get(kind[1]), dict) == values else None

    def visit(self, tree: ast.AST) -> None:
        bound = Counter(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
        once = {name for name, times in bound.items() if times == 1}  # a name bound twice may hold anything
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in once):
                kind = self.kind(node.value)
                if kind is not None:
                    self.names[node.targets[0].id] = kind
            elif (isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name)
                  and node.target.id in once):
                collection = self.iterated(node.iter)
                if collection is not None:
                    self.names[node.target.id] = (_RECORD, collection)
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript | ast.Call):
                self.kind(node)


def unknown_fields(source: str, state: State, code: str = "") -> list[tuple[str, str]]:
    """The (collection, field) pairs a validator reads from a record that no record of that collection has and
    the environment's `code` never names as a string or a keyword (so no tool writes it). [] when the source does not parse."""
    parsed = validator_tree(source)
    if parsed is None:
        return []
    tree, params = parsed
    reads = _Reads(state, params)
    reads.visit(tree)
    return [(c, f) for c, f in dict.fromkeys(reads.read)
            if f not in record_fields(state, c) and not _written(f, code)]


def _written(field: str, code: str) -> bool:
    """Whether the environment's code may write `field`: it names it as a string, or as a keyword or a name
    assigned to (`dict(refund_id=…)`)."""
    return (f"'{field}'" in code or f'"{field}"' in code
            or re.search(rf"(?<![\w.]){re.escape(field)}\s*=(?!=)", code) is not None)


def fields_problem(source: str, state: State, code: str = "") -> str | None:
    """Why a validator is refused for the record fields it reads (with the records' real fields), or None."""
    unknown = unknown_fields(source, state, code)
    if not unknown:
        return None
    return "; ".join(f"it reads field {field!r} of a record of {collection}, which no record of {collection} has "
                     f"(their fields: {', '.join(sorted(record_fields(state, collection)))})" for collection, field in unknown)


def named_fields(state: State, texts: Sequence[str], limit: int = 6) -> list[str]:
    """One line per record the `texts` (checklist items) name by id: `tickets T-10001: field, field, …` (its
    exact keys), at most `limit`."""
    joined = "\n".join(texts)
    named = [a for a in records(state)
             if re.search(rf"(?<![\w-]){re.escape(a.record_id)}(?![\w-])", joined) is not None]
    return [f"{a.collection} {a.record_id}: {', '.join(a.record)}" for a in named[:limit]]
