"""Splice generated methods into the environment class with the AST (never by matching lines of text).

EnvScaler found `__init__` by text and hoisted any line that looked like an import, even inside methods.
Here every position comes from the parsed tree: module-level imports of the class skeleton and of the
method snippets are merged into one deduplicated block at the top, and each method is inserted at (or
replaces the method of the same name in) the end of the class body, re-indented to the body's indent.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

from envscaler_mcp.synth._common_parse import AnswerFormatError


@dataclass
class MethodCode:
    """A parsed method answer: the target method, private helper methods it brought, and its imports."""

    name: str
    source: str
    helpers: dict[str, str] = field(default_factory=dict)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)


def _segment(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    assert node.end_lineno is not None
    return textwrap.dedent("\n".join(lines[start - 1 : node.end_lineno]))


def parse_method_snippet(code: str, name: str) -> MethodCode:
    """Split a method answer into the method `name`, helper methods and imports.

    Accepts a bare `def`, an indented `def`, or the method inside a copy of the class. Raises
    AnswerFormatError when the code does not parse, lacks the method, or has other top-level statements.
    """
    code = textwrap.dedent(code.expandtabs(4)).strip("\n")
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise AnswerFormatError(f"the code has a syntax error at line {exc.lineno}: {exc.msg}") from exc
    lines = code.splitlines()
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    imports: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
                imports.append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node)
        elif isinstance(node, ast.ClassDef):
            functions += [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and (n.name == name or (n.name.startswith("_") and not n.name.startswith("__")))]
            imports += [n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a stray docstring or string literal
        else:
            raise AnswerFormatError(
                f"line {node.lineno}: only the method `{name}` (plus private helper methods and imports) may be "
                "written; move other statements into the method"
            )
    target = [f for f in functions if f.name == name]
    if not target:
        found = ", ".join(f.name for f in functions) or "none"
        raise AnswerFormatError(f"the code must define the method `{name}` (methods found: {found})")
    if isinstance(target[0], ast.AsyncFunctionDef):
        raise AnswerFormatError(f"`{name}` must be a plain `def`, not `async def`")
    args = target[0].args
    if not args.args or args.args[0].arg != "self":
        raise AnswerFormatError(f"`{name}` must be an instance method whose first parameter is `self`")
    helpers: dict[str, str] = {}
    for f in functions:
        if f.name == name:
            continue
        if not f.name.startswith("_") or f.name.startswith("__"):
            raise AnswerFormatError(
                f"only `{name}` may be public; rename the helper `{f.name}` to `_{f.name}` or drop it"
            )
        if not f.args.args or f.args.args[0].arg != "self":
            raise AnswerFormatError(f"helper `{f.name}` must be a method taking `self` first")
        helpers[f.name] = _segment(lines, f)
    return MethodCode(name=name, source=_segment(lines, target[0]), helpers=helpers, imports=imports)


def _find_class(tree: ast.Module, class_name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return node
    raise AnswerFormatError(f"class `{class_name}` not found in the module")


def _import_block(imports: list[ast.Import | ast.ImportFrom]) -> list[str]:
    plain: dict[str, None] = {}
    from_names: dict[tuple[int, str], dict[str, None]] = {}
    for node in imports:
        if isinstance(node, ast.Import):
            for alias in node.names:
                plain[f"import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")] = None
        else:
            key = (node.level, node.module or "")
            names = from_names.setdefault(key, {})
            for alias in node.names:
                names[alias.name + (f" as {alias.asname}" if alias.asname else "")] = None
    out = list(plain)
    for (level, module), names in from_names.items():
        out.append(f"from {'.' * level}{module} import {', '.join(names)}")
    return out


def assemble_class(base_source: str, class_name: str, methods: list[MethodCode]) -> str:
    """Return `base_source` with every method spliced into class `class_name` and imports hoisted.

    A method whose name already exists in the class replaces it (that is how repairs land); a helper is
    added only when the class has no method of that name yet.
    """
    tree = ast.parse(base_source)
    cls = _find_class(tree, class_name)
    lines = base_source.splitlines()
    body_indent = " " * cls.body[0].col_offset if cls.body else "    "
    existing = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in future]
    replaced: dict[int, tuple[int, str]] = {}  # start line index -> (end line index exclusive, new text)
    appended: list[str] = []
    added: set[str] = set()

    def indent(text: str) -> str:
        return textwrap.indent(text, body_indent, lambda line: bool(line.strip()))

    for method in methods:
        imports += method.imports
        pieces = [(method.name, method.source, True)] + [(h, src, False) for h, src in method.helpers.items()]
        for name, src, is_target in pieces:
            node = existing.get(name)
            if node is not None:
                if is_target:
                    start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                    assert node.end_lineno is not None
                    replaced[start] = (node.end_lineno, indent(src))
            elif name not in added:
                appended.append(indent(src))
                added.add(name)

    assert cls.end_lineno is not None
    drop: set[int] = set()
    for imp in imports + future:
        if imp in tree.body:
            assert imp.end_lineno is not None
            drop.update(range(imp.lineno - 1, imp.end_lineno))
    out: list[str] = []
    i = 0
    class_last = cls.end_lineno - 1
    while i < len(lines):
        if i in replaced:
            end, text = replaced[i]
            out.append(text)
            covered_end = i <= class_last < end
            i = end
        else:
            if i not in drop:
                out.append(lines[i])
            covered_end = i == class_last
            i += 1
        if covered_end:
            for text in appended:
                out += ["", text]

    header = [ast.unparse(n) for n in future[:1]] + _import_block(imports)
    body = "\n".join(out).strip("\n")
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None and tree.body and isinstance(tree.body[0], ast.Expr):
        doc_node = tree.body[0]
        assert doc_node.end_lineno is not None
        doc_text = "\n".join(lines[: doc_node.end_lineno])
        body = body[len(doc_text):].strip("\n") if body.startswith(doc_text) else body
        result = doc_text + "\n\n" + "\n".join(header) + "\n\n\n" + body + "\n"
    else:
        result = "\n".join(header) + ("\n\n\n" if header else "") + body + "\n"
    try:
        ast.parse(result)
    except SyntaxError as exc:
        raise AnswerFormatError(f"the assembled class does not parse (line {exc.lineno}: {exc.msg})") from exc
    return result


def method_source(source: str, class_name: str, name: str) -> str:
    """The source text of method `name` of class `class_name` (for the checker and for repairs)."""
    tree = ast.parse(source)
    cls = _find_class(tree, class_name)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return _segment(source.splitlines(), node)
    raise KeyError(name)


def method_with_helpers(source: str, class_name: str, name: str) -> str:
    """Method `name` followed by the private helper methods it calls (transitively), for review prompts."""
    tree = ast.parse(source)
    cls = _find_class(tree, class_name)
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    if name not in methods:
        raise KeyError(name)
    lines = source.splitlines()
    order, queue = [name], [name]
    while queue:
        for node in ast.walk(methods[queue.pop()]):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
                    and node.attr.startswith("_") and node.attr in methods and node.attr not in order):
                order.append(node.attr)
                queue.append(node.attr)
    return "\n\n".join(_segment(lines, methods[n]) for n in order)


def without_methods(source: str, class_name: str, names: set[str]) -> str:
    """`source` with the methods `names` of class `class_name` removed (tools dropped by the check)."""
    tree = ast.parse(source)
    cls = _find_class(tree, class_name)
    lines = source.splitlines()
    cut: set[int] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            assert node.end_lineno is not None
            cut.update(range(start - 1, node.end_lineno))
    return "\n".join(line for n, line in enumerate(lines) if n not in cut) + "\n"
