"""Which state attributes each method reads and writes, and which self-methods it calls (static, AST only).

A write is an assignment, augmented assignment, `del` or subscript/attribute assignment on an
expression rooted at `self.<attr>`, or a mutating call (`append`, `update`, `pop` …) on one.
Local aliases count too: after `order = self.orders[oid]`, `order["status"] = "x"` writes `orders`,
and so does `slot["status"] = "x"` in `for slot in [s for s in self.slots.values() if …]`. A fresh
container of state records (a comprehension, `sorted(...)`, `.copy()`) is not state itself: sorting
or appending to it writes nothing, while changing one of its records does.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
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


# A reference: (state attributes an expression refers into, number of fresh container levels on top).
# `self.orders` -> ({orders}, 0); `sorted(self.orders.values())` -> ({orders}, 1): a new list whose
# elements are state records. Mutating a level-0 object writes state; mutating a fresh container does not.
Ref = tuple[frozenset[str], int]
_NONE: Ref = (frozenset(), 0)
_NEW_CONTAINER_OF_ELEMENTS = frozenset(
    {"sorted", "list", "tuple", "reversed", "filter", "set", "frozenset", "enumerate", "zip"}
)
_ELEMENT_OF = frozenset({"next", "max", "min"})
_ELEMENT_METHODS = frozenset({"get", "setdefault", "__getitem__"})
_SAME_CONTAINER_METHODS = frozenset({"values", "items"})


def _merge(a: Ref, b: Ref) -> Ref:
    if not a[0]:
        return b
    if not b[0]:
        return a
    return (a[0] | b[0], min(a[1], b[1]))


def _element(ref: Ref) -> Ref:
    return (ref[0], max(ref[1] - 1, 0))


# A parameter stands for whatever a caller passes: it is a pseudo state root named with this prefix, which
# no attribute name can carry, so a write to it shows which parameters a function changes.
_PARAM = "<param>"

# What a callable changes in its arguments: its parameter names in call order (after `self` for methods) and
# the set of those it changes. Keys: a module-level function's name, or "self.<method>".
Callees = dict[str, tuple[tuple[str, ...], frozenset[str]]]


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> tuple[str, ...]:
    names = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    return (*(names[1:] if method else names), *(a.arg for a in func.args.kwonlyargs))


class _MethodVisitor(ast.NodeVisitor):
    def __init__(self, helper_reads: dict[str, list[str]] | None = None, callees: Callees | None = None) -> None:
        self.fx = MethodEffects()
        self.aliases: dict[str, Ref] = {}
        self.helper_reads = helper_reads or {}
        self.callees = callees or {}

    def ref(self, node: ast.expr) -> Ref:
        """What state an expression refers into (through subscripts, attributes, views, aliases)."""
        attr = _self_attr(node)
        if attr is not None:
            return (frozenset({attr}), 0)
        if isinstance(node, ast.Subscript):
            base = self.ref(node.value)
            return (base[0], max(base[1], 1)) if isinstance(node.slice, ast.Slice) else _element(base)
        if isinstance(node, ast.Attribute):
            return _element(self.ref(node.value))
        if isinstance(node, ast.Starred):
            return self.ref(node.value)
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, _NONE)
        if isinstance(node, ast.IfExp):
            return _merge(self.ref(node.body), self.ref(node.orelse))
        if isinstance(node, ast.BoolOp):
            result = _NONE
            for value in node.values:
                result = _merge(result, self.ref(value))
            return result
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(node)
        if isinstance(node, ast.Call):
            return self._call_ref(node)
        return _NONE

    def _call_ref(self, node: ast.Call) -> Ref:
        func = node.func
        helper = _self_attr(func)
        if helper is not None:
            # `self._find(x)` may return a record inside the state the helper reads.
            return (frozenset(self.helper_reads.get(helper, [])), 0)
        if isinstance(func, ast.Attribute):
            if func.attr in _ELEMENT_METHODS:
                return _element(self.ref(func.value))
            if func.attr in _SAME_CONTAINER_METHODS:
                return self.ref(func.value)
            if func.attr == "copy":  # a shallow copy: a new container of the same elements
                base = self.ref(func.value)
                return (base[0], max(base[1], 1))
            return _NONE
        if isinstance(func, ast.Name) and node.args:
            if func.id in _NEW_CONTAINER_OF_ELEMENTS:
                result = _NONE
                for arg in node.args:
                    base = self.ref(arg)
                    result = _merge(result, (base[0], max(base[1], 1)))
                return result
            if func.id in _ELEMENT_OF:
                return _element(self.ref(node.args[0]))
            if func.id == "iter":
                return self.ref(node.args[0])
        return _NONE

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Ref:
        saved = dict(self.aliases)
        try:
            for gen in node.generators:
                self._bind(gen.target, _element(self.ref(gen.iter)))
            elt = node.value if isinstance(node, ast.DictComp) else node.elt
            inner = self.ref(elt)
        finally:
            self.aliases = saved
        return (inner[0], inner[1] + 1) if inner[0] else _NONE

    def _bind(self, target: ast.expr, ref: Ref) -> None:
        if not ref[0]:
            return
        if isinstance(target, ast.Name):
            self.aliases[target.id] = _merge(self.aliases.get(target.id, _NONE), ref)
        elif isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._bind(elt, _element(ref) if ref[1] else ref)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, ref)

    def _write_object(self, obj: ast.expr) -> None:
        """`obj` is modified in place: a write when obj is state itself (not a fresh container)."""
        roots, fresh = self.ref(obj)
        if fresh == 0:
            for root in sorted(roots):
                _add(self.fx.writes, root)

    def _write_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._write_target(elt)
            return
        if isinstance(target, ast.Starred):
            self._write_target(target.value)
            return
        attr = _self_attr(target)
        if attr is not None:
            _add(self.fx.writes, attr)
        elif isinstance(target, ast.Subscript | ast.Attribute):
            self._write_object(target.value)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._write_target(target)
            self._bind(target, self.ref(node.value))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._write_target(node.target)
            self._bind(node.target, self.ref(node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._write_target(node.target)
        if isinstance(node.target, ast.Name):  # `lst += [...]` extends a list in place
            self._write_object(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._write_target(target)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._bind(node.target, _element(self.ref(node.iter)))
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind(node.target, self.ref(node.value))
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._bind(node.target, _element(self.ref(node.iter)))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        callee: str | None = None
        if isinstance(func, ast.Attribute):
            method = _self_attr(func)
            if method is not None:
                _add(self.fx.calls, method)
                callee = f"self.{method}"
            elif func.attr in MUTATING_METHODS:
                self._write_object(func.value)
        elif isinstance(func, ast.Name):
            callee = func.id
        if callee in self.callees:
            self._write_arguments(node, *self.callees[callee])
        self.generic_visit(node)

    def _write_arguments(self, node: ast.Call, params: tuple[str, ...], changed: frozenset[str]) -> None:
        """A call to a helper that changes some of its parameters writes what is passed there."""
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            if position < len(params) and params[position] in changed:
                self._write_object(arg)
        for keyword in node.keywords:
            if keyword.arg in changed:
                self._write_object(keyword.value)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = _self_attr(node)
        if attr is not None and isinstance(node.ctx, ast.Load):
            _add(self.fx.reads, attr)
        self.generic_visit(node)


def method_effects(
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    helper_reads: dict[str, list[str]] | None = None,
    callees: Callees | None = None,
    params: tuple[str, ...] = (),
) -> MethodEffects:
    """Direct reads, writes and self-calls of one method.

    Aliases are collected over repeated passes until they settle, so a write that appears before its
    alias's assignment (in a loop) is still caught: the analysis is flow-insensitive and errs toward
    'writes'. helper_reads maps other methods to the state they read: their results may alias it.
    callees says which parameters helpers change (a call writes what it passes there); `params` are this
    function's own: a write to one shows in `writes` as `<param>NAME` (see `changed_params`).
    """
    aliases: dict[str, Ref] = {name: (frozenset({_PARAM + name}), 0) for name in params}
    for _ in range(6):
        visitor = _MethodVisitor(helper_reads, callees)
        visitor.aliases = dict(aliases)
        visitor.visit(func)
        if visitor.aliases == aliases:
            break
        aliases = visitor.aliases
    fx = visitor.fx
    # `self.method(...)` loads `self.method`; it is a call, not a state read.
    fx.reads = [r for r in fx.reads if r not in fx.calls]
    return fx


def changed_params(fx: MethodEffects) -> frozenset[str]:
    """The parameters a function changes in place (from the `<param>` roots among its writes)."""
    return frozenset(w.removeprefix(_PARAM) for w in fx.writes if w.startswith(_PARAM))


def _helper_callees(
    methods: list[ast.FunctionDef], functions: list[ast.FunctionDef], reads: dict[str, list[str]]
) -> Callees:
    """Which parameters each module-level function and method changes, followed through calls between
    them until nothing changes."""
    signatures = {f.name: (f, _params(f, method=False)) for f in functions}
    signatures |= {f"self.{m.name}": (m, _params(m, method=True)) for m in methods}
    signatures = {key: sig for key, sig in signatures.items() if sig[1]}  # without parameters: nothing to change
    # A function's changed parameters depend only on those of the functions it calls: after the first round,
    # only the callers of an entry that changed are worked out again (until nothing changes).
    calls = {key: _called(func, signatures) for key, (func, _) in signatures.items()}
    callees: Callees = {}
    todo = set(signatures)
    for _ in range(len(signatures) + 1):
        found: Callees = {key: entry for key, entry in callees.items() if key not in todo}
        for key in todo:
            func, params = signatures[key]
            changed = changed_params(method_effects(func, reads, callees, params))
            if changed:
                found[key] = (params, changed)
        moved = {key for key in signatures if found.get(key) != callees.get(key)}
        callees = found
        todo = {key for key, called in calls.items() if called & moved}
        if not todo:
            break
    return callees


def _called(func: ast.FunctionDef, signatures: Mapping[str, object]) -> set[str]:
    """The module-level functions and `self.` methods among `signatures` that `func` calls."""
    found = set()
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            target = node.func
            if isinstance(target, ast.Name) and target.id in signatures:
                found.add(target.id)
            elif (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == "self" and f"self.{target.attr}" in signatures):
                found.add(f"self.{target.attr}")
    return found


def class_effects(
    methods: list[ast.FunctionDef], functions: list[ast.FunctionDef] | None = None
) -> dict[str, MethodEffects]:
    """Effects of every method of a class, counting writes through records returned by helper methods
    and through state passed to helpers (module-level `functions` or methods) that change their arguments."""
    plain = {m.name: method_effects(m) for m in methods}
    reads = {name: fx.reads for name, fx in plain.items() if fx.reads}
    callees = _helper_callees(methods, functions or [], reads)
    result = {}
    for m in methods:
        fx = method_effects(m, reads, callees, _params(m, method=True))
        fx.writes = [w for w in fx.writes if not w.startswith(_PARAM)]
        result[m.name] = fx
    return result


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
