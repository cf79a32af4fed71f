"""Which state attributes each method reads and writes, and which self-methods it calls (static, AST only).

A write is an assignment, augmented assignment, `del` or subscript/attribute assignment on an
expression rooted at `self.<attr>`, or a mutating call (`append`, `update`, `pop` …) on one.
Local aliases count too: after `order = self.orders[oid]`, `order["status"] = "x"` writes `orders`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "update",
        "clear",
        "pop",
        "remove",
        "discard",
        "setdefault",
        "popitem",
        "add",
        "sort",
        "reverse",
        "appendleft",
        "popleft",
        "extendleft",
        "rotate",
        "difference_update",
        "intersection_update",
        "symmetric_difference_update",
    }
)
# Methods whose result still refers into the receiver (so writing to the result writes the state).
_VIEW_METHODS = frozenset({"get", "values", "items", "setdefault", "__getitem__"})


@dataclass
class MethodEffects:
    """What one method touches directly (without following calls)."""

    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)


def _add(items: list[str], value: str) -> None:
    if value not in items:
        items.append(value)


def _self_attr(node: ast.expr) -> str | None:
    """`self.x` -> 'x'."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


class _MethodVisitor(ast.NodeVisitor):
    def __init__(self, helper_reads: dict[str, list[str]] | None = None) -> None:
        self.fx = MethodEffects()
        self.aliases: dict[str, set[str]] = {}
        self.helper_reads = helper_reads or {}

    def roots(self, node: ast.expr) -> set[str]:
        """State attributes an expression refers into (through subscripts, attributes, views, aliases)."""
        while True:
            attr = _self_attr(node)
            if attr is not None:
                return {attr}
            if isinstance(node, ast.Subscript | ast.Starred):
                node = node.value
            elif isinstance(node, ast.Attribute):
                node = node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _VIEW_METHODS
            ):
                node = node.func.value
            elif isinstance(node, ast.Call) and _self_attr(node.func) in self.helper_reads:
                # `self._find(x)` may return a record inside the state the helper reads.
                return set(self.helper_reads[_self_attr(node.func) or ""])
            elif isinstance(node, ast.Name):
                return set(self.aliases.get(node.id, set()))
            elif isinstance(node, ast.IfExp):
                return self.roots(node.body) | self.roots(node.orelse)
            elif isinstance(node, ast.BoolOp):
                return set().union(*(self.roots(v) for v in node.values))
            else:
                return set()

    def _bind(self, target: ast.expr, roots: set[str]) -> None:
        if not roots:
            return
        if isinstance(target, ast.Name):
            self.aliases.setdefault(target.id, set()).update(roots)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._bind(elt, roots)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, roots)

    def _write_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._write_target(elt)
            return
        if isinstance(target, ast.Starred):
            self._write_target(target.value)
            return
        if isinstance(target, ast.Name):
            return  # rebinding a local never writes state
        for root in sorted(self.roots(target)):
            _add(self.fx.writes, root)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._write_target(target)
            self._bind(target, self.roots(node.value))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._write_target(node.target)
            self._bind(node.target, self.roots(node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._write_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._write_target(target)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._bind(node.target, self.roots(node.iter))
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind(node.target, self.roots(node.value))
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._bind(node.target, self.roots(node.iter))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            method = _self_attr(func)
            if method is not None:
                _add(self.fx.calls, method)
            elif func.attr in MUTATING_METHODS:
                for root in sorted(self.roots(func.value)):
                    _add(self.fx.writes, root)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = _self_attr(node)
        if attr is not None and isinstance(node.ctx, ast.Load):
            _add(self.fx.reads, attr)
        self.generic_visit(node)


def method_effects(
    func: ast.FunctionDef | ast.AsyncFunctionDef, helper_reads: dict[str, list[str]] | None = None
) -> MethodEffects:
    """Direct reads, writes and self-calls of one method.

    Aliases are collected in a first pass so that a write that appears before its alias's
    assignment in a loop is still caught (flow-insensitive, which errs toward 'writes').
    helper_reads maps other methods to the state they read: their results may alias that state.
    """
    first = _MethodVisitor(helper_reads)
    first.visit(func)
    second = _MethodVisitor(helper_reads)
    second.aliases = first.aliases
    second.visit(func)
    fx = second.fx
    # `self.method(...)` loads `self.method`; it is a call, not a state read.
    fx.reads = [r for r in fx.reads if r not in fx.calls]
    return fx


def class_effects(methods: list[ast.FunctionDef]) -> dict[str, MethodEffects]:
    """Effects of every method of a class, counting writes through records returned by helper methods."""
    plain = {m.name: method_effects(m) for m in methods}
    reads = {name: fx.reads for name, fx in plain.items() if fx.reads}
    return {m.name: method_effects(m, reads) for m in methods}


def transitive_writes(effects: dict[str, MethodEffects], name: str) -> list[str]:
    """State attributes written by `name` or any self-method it calls, transitively."""
    seen: set[str] = set()
    writes: list[str] = []
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen or current not in effects:
            continue
        seen.add(current)
        for w in effects[current].writes:
            _add(writes, w)
        stack.extend(reversed(effects[current].calls))
    return writes
