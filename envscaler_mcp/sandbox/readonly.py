"""Whether a validator's source provably cannot change the states it is given (so the batch process need not
compare them with their pristine images after it runs). Standard library only.

A state is JSON data: dicts, lists, strings, numbers, booleans and None; only dicts and lists change, and only
through item stores and deletions (`s[k] = v`, `del s[k]`, slices too), augmented assignment (`l += [...]`,
`d |= {...}`, whatever the target names) and their methods or the module functions that call them by name
(`append`, `update`, `operator.setitem`, `collections.Counter.subtract` ...), or through a method fetched by
its name at run time (`getattr`, `operator.methodcaller`). Dunder and private attributes are refused before this
runs (sandbox/restrict.py). A source with none of these anywhere (its helper functions, lambdas and classes
included) reads only. Anything else, or anything unsure, counts as a possible change: the comparison stays.
"""

from __future__ import annotations

import ast

# Names that change a dict or list in place, or reach such a method by a name known only at run time: as an
# attribute (`x.pop`, `operator.setitem`), a name (`getattr`) or an import (`from operator import iadd as add`).
MUTATING_NAMES = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "popitem", "setdefault", "update",
    "add", "discard", "subtract", "move_to_end", "appendleft", "extendleft", "rotate", "difference_update",
    "intersection_update", "symmetric_difference_update",
    "setitem", "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imod", "imul", "imatmul", "ior",
    "ipow", "irshift", "isub", "itruediv", "ixor", "attrgetter", "methodcaller",
    "getattr", "setattr", "delattr", "vars", "exec", "eval", "compile", "globals", "locals", "breakpoint",
    "transcript_checks",  # helpers of our own: not shown here to leave their arguments alone
})


def reads_only(tree: ast.AST) -> bool:
    """True when nothing in `tree` can change a JSON state in place (see the module's docstring)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign):
            return False
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            return False
        if isinstance(node, ast.Attribute) and node.attr in MUTATING_NAMES:
            return False
        if isinstance(node, ast.Name) and node.id in MUTATING_NAMES:
            return False
        if isinstance(node, ast.ImportFrom) and node.module in MUTATING_NAMES:
            return False  # from transcript_checks import says
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                alias.name == "*" or alias.name.rsplit(".", 1)[-1] in MUTATING_NAMES for alias in node.names):
            return False
    return True
