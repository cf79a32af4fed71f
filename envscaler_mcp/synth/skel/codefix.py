"""Mechanical fixes applied to generated code before it is checked, so a harmless habit of a model does not
cost a whole environment. Each fix returns the new source and one note per change (kept in provenance).

- `from M import *` where M is an allowed standard module becomes `from M import a, b` with exactly the names
  of M the module uses (or disappears when it uses none). Star imports from other modules are left for the
  static checks to refuse.
"""

from __future__ import annotations

import ast
import importlib

from envscaler_mcp.skeleton.checks import ALLOWED_IMPORTS


def _public_names(module: str) -> set[str]:
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return set(names)


def _annotation_strings(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            found.append(node.annotation)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.returns)
    return [a for a in found if a is not None]


def used_names(tree: ast.Module) -> set[str]:
    """Every bare name the module reads, including names inside string annotations."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for annotation in _annotation_strings(tree):
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                try:
                    inner = ast.parse(node.value, mode="eval")
                except SyntaxError:
                    continue
                names |= {n.id for n in ast.walk(inner) if isinstance(n, ast.Name)}
    return names


def _defined_names(tree: ast.Module) -> set[str]:
    defined: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return defined


def explicit_star_imports(source: str) -> tuple[str, list[str]]:
    """Rewrite star imports from allowed modules into explicit imports of the names used.

    Returns the source unchanged (and no notes) when it does not parse or has no such import. When two
    star imports offer the same name, the later one wins, as it does when Python runs the module.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    stars = [n for n in tree.body if isinstance(n, ast.ImportFrom) and not n.level and n.module
             and any(a.name == "*" for a in n.names) and n.module.split(".")[0] in ALLOWED_IMPORTS]
    if not stars:
        return source, []
    wanted = used_names(tree) - _defined_names(tree)
    owner: dict[str, str] = {}
    for node in stars:
        assert node.module is not None
        for name in _public_names(node.module) & wanted:
            owner[name] = node.module
    lines = source.splitlines()
    notes = []
    for node in sorted(stars, key=lambda n: n.lineno, reverse=True):
        assert node.module is not None and node.end_lineno is not None
        names = sorted(n for n, m in owner.items() if m == node.module)
        replacement = [f"from {node.module} import {', '.join(names)}"] if names else []
        lines[node.lineno - 1 : node.end_lineno] = replacement
        notes.append(f"`from {node.module} import *` rewritten as "
                     + (f"`{replacement[0]}`" if replacement else "nothing (no name of it is used)"))
    return "\n".join(lines) + ("\n" if source.endswith("\n") else ""), list(reversed(notes))
