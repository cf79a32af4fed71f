"""Static checks on environment source before anything runs it, and a JSON check for states.

These checks are a first gate, not a sandbox: they keep environment modules to plain, declarative
Python (allowlisted imports, no dynamic code, no dunder access, no work at import time). Servers
still run the code in their own process with time and memory limits.

Each problem is one of two kinds (`check_findings`). A *refusal* is what the OS layers around a server
cannot contain or what we cannot run: code we cannot use as an environment (a syntax error, a missing
class, async or twice-defined methods, relative imports, a base class from elsewhere) and code that reaches
into the interpreter the environment shares with the server runtime (its admin plane, the rollback journal,
the state it reports, the other episodes of an HTTP process): dunder access, `exec`/`eval`/`compile`/
`__import__`, `globals()`/`locals()`, `global` statements, and modules such as `sys`, `gc`, `inspect`,
`ctypes`, `importlib`, `threading`, `asyncio`, `pickle`. A *containable* problem only does what the OS
layers stop at the process's edge (files, network, programs: `open`, `os`, `socket`, `subprocess`), makes
runs differ (`random`, `time`) or is a style our own code keeps (`getattr` with a computed name, `vars()`,
`super().__init__()`, work at import time, a base class defined in the module). Bundled and synthesized
code gets both as errors; imported third-party code, when the OS layers are on, gets the second kind as
warnings (`check_findings(...).warnings`).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

from envscaler_mcp.skeleton.quick_check import plain_json
from envscaler_mcp.skeleton.schema import parsed_source

ALLOWED_IMPORTS = frozenset(
    {
        "__future__",
        "typing",
        "typing_extensions",
        "datetime",
        "re",
        "math",
        "copy",
        "collections",
        "uuid",
        "json",
        "dataclasses",
        "enum",
        "itertools",
        "functools",
        "string",
        "decimal",
        "statistics",
        "operator",
    }
)
FORBIDDEN_CALLS = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "__import__",
        "globals",
        "locals",
        "vars",
        "setattr",
        "delattr",
        "input",
        "breakpoint",
        "exit",
        "quit",
        "help",
        "memoryview",
    }
)
# Calls that reach the interpreter the code shares with the server runtime: refused even when contained.
INTERPRETER_CALLS = frozenset({"exec", "eval", "compile", "__import__", "globals", "locals"})
# Modules that reach the interpreter (its frames, objects, import system, threads and event loop, code
# objects): what they do stays inside the server process, so the OS layers cannot contain it.
INTERPRETER_MODULES = frozenset({
    "sys", "gc", "inspect", "ctypes", "importlib", "builtins", "types", "threading", "_thread", "asyncio",
    "concurrent", "multiprocessing", "signal", "atexit", "pickle", "marshal", "runpy", "code", "codeop",
    "faulthandler", "tracemalloc", "weakref", "ast", "dis", "site", "sysconfig", "copyreg", "shelve", "dill",
    "cloudpickle",
})
_DUNDER = re.compile(r"^__.+__$")
_SAFE_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "property",
        "setter",
        "getter",
        "deleter",
        "cached_property",
        "cache",
        "lru_cache",
        "wraps",
        "dataclass",
        "unique",
        "total_ordering",
    }
)
_CONST_CALLS = frozenset(
    {
        "TypedDict",
        "NewType",
        "TypeVar",
        "compile",
        "frozenset",
        "set",
        "tuple",
        "dict",
        "list",
        "Decimal",
        "namedtuple",
        "NamedTuple",
        "Enum",
        "date",
        "datetime",
        "timedelta",
        "field",
    }
)
# Calls that make a run non-deterministic (a replay would not give the same state).
_NONDETERMINISTIC = {
    "now": "datetime.now()",
    "utcnow": "datetime.utcnow()",
    "today": "date.today()",
    "uuid1": "uuid.uuid1()",
    "uuid4": "uuid.uuid4()",
}


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def is_type_expr(node: ast.expr | None) -> bool:
    """True for annotation-like expressions: names, dotted names, subscripts, `X | Y`, literals."""
    if node is None or isinstance(node, ast.Name | ast.Constant):
        return True
    if isinstance(node, ast.Attribute):
        return is_type_expr(node.value)
    if isinstance(node, ast.Subscript):
        return is_type_expr(node.value) and is_type_expr(node.slice)
    if isinstance(node, ast.Tuple | ast.List):
        return all(is_type_expr(e) for e in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return is_type_expr(node.left) and is_type_expr(node.right)
    return False


def is_constant_expr(node: ast.expr | None) -> bool:
    """True for values safe to evaluate at import time: literals, type expressions, and a few
    constructor calls (TypedDict(...), re.compile(...), frozenset(...) …) whose arguments are constant."""
    if node is None:
        return True
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if is_type_expr(node):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(is_constant_expr(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(is_constant_expr(k) for k in node.keys if k is not None) and all(
            is_constant_expr(v) for v in node.values
        )
    if isinstance(node, ast.UnaryOp | ast.BinOp):
        parts = [node.operand] if isinstance(node, ast.UnaryOp) else [node.left, node.right]
        return all(is_constant_expr(p) for p in parts)
    if isinstance(node, ast.Call) and _call_name(node.func) in _CONST_CALLS:
        return all(is_constant_expr(a) for a in node.args) and all(
            is_constant_expr(k.value) for k in node.keywords
        )
    return False


class _BodyChecker(ast.NodeVisitor):
    """Walks the whole module for imports, forbidden calls and dunder access."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.containable: set[str] = set()  # problems the OS layers contain (warnings for third-party code)

    def add(self, node: ast.AST, text: str, *, containable: bool = False) -> None:
        problem = f"line {getattr(node, 'lineno', '?')}: {text}"
        self.problems.append(problem)
        if containable:
            self.containable.add(problem)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.add(
                node, "relative imports are not allowed; an environment is a single self-contained module."
            )
            return
        self._check_module(node, node.module or "")
        for alias in node.names:
            if alias.name == "*":
                self.add(node, f"`from {node.module} import *` is not allowed; import the names you use.")

    def _check_module(self, node: ast.AST, module: str) -> None:
        top = module.split(".")[0]
        if top not in ALLOWED_IMPORTS:
            self.add(
                node,
                f"import of '{module}' is not allowed; use only the standard modules "
                f"{', '.join(sorted(ALLOWED_IMPORTS - {'__future__'}))}.",
                containable=top not in INTERPRETER_MODULES,
            )

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        attr = node.args[1] if len(node.args) >= 2 else None
        literal = attr.value if isinstance(attr, ast.Constant) and isinstance(attr.value, str) else None
        if name in {"getattr", "hasattr", "setattr", "delattr"} and literal is not None and _DUNDER.match(literal):
            self.add(node, f"'{name}(…, \"{literal}\")' reaches a dunder attribute; this is not allowed.")
        elif name in FORBIDDEN_CALLS:
            self.add(
                node,
                f"call of '{name}()' is not allowed in environment code; "
                "write the logic with plain attribute and dict access.",
                containable=name not in INTERPRETER_CALLS,
            )
        elif name in {"getattr", "hasattr"} and attr is not None and literal is None:
            self.add(
                node,
                f"'{name}()' with a computed attribute name is not allowed; "
                "use explicit attributes or a dict lookup.",
                containable=True,
            )
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _DUNDER.match(node.attr):
            # `super().__init__(...)`: the parent's initialiser, not a way into the interpreter
            of_super = node.attr == "__init__" and isinstance(node.value, ast.Call) and \
                _call_name(node.value.func) == "super" and not node.value.args
            self.add(
                node,
                f"access to dunder attribute '.{node.attr}' is not allowed; "
                "environment code may only use ordinary attributes.",
                containable=of_super,
            )
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.add(node, f"`global {', '.join(node.names)}` shares state between every episode of a server "
                       "process; keep state on `self`.")

    def visit_Name(self, node: ast.Name) -> None:
        if _DUNDER.match(node.id):
            self.add(node, f"use of '{node.id}' is not allowed in environment code.")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.add(node, f"async method '{node.name}' is not supported; tools are plain synchronous methods.")
        self.generic_visit(node)


def _check_definition_time(node: ast.stmt, out: list[str], where: str) -> None:
    """Statements of a module or class body must do nothing but define things."""
    line = f"line {node.lineno}"
    if isinstance(node, ast.Import | ast.ImportFrom | ast.Pass):
        return
    if (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ):
        return
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if _call_name(target) not in _SAFE_DECORATORS:
                out.append(f"{line}: decorator '{ast.unparse(dec)}' on '{node.name}' is not allowed.")
        args = node.args
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None and not is_constant_expr(default):
                out.append(
                    f"{line}: default value '{ast.unparse(default)}' of '{node.name}' must be a literal."
                )
        annotations = [a.annotation for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        annotations.append(node.returns)
        for ann in annotations:
            if ann is not None and not is_type_expr(ann):
                out.append(
                    f"{line}: annotation '{ast.unparse(ann)}' of '{node.name}' must be a type expression."
                )
        return
    if isinstance(node, ast.ClassDef):
        for expr in [*node.bases, *(k.value for k in node.keywords)]:
            if not is_constant_expr(expr):
                out.append(
                    f"{line}: base or keyword '{ast.unparse(expr)}' of class '{node.name}' must be a name."
                )
        if node.decorator_list and any(
            _call_name(d.func if isinstance(d, ast.Call) else d) not in _SAFE_DECORATORS
            for d in node.decorator_list
        ):
            out.append(f"{line}: class decorators other than @dataclass are not allowed on '{node.name}'.")
        for stmt in node.body:
            _check_definition_time(stmt, out, f"class '{node.name}'")
        return
    if isinstance(node, ast.Assign | ast.AnnAssign):
        value = node.value
        ann = node.annotation if isinstance(node, ast.AnnAssign) else None
        if is_constant_expr(value) and is_type_expr(ann):
            return
        out.append(
            f"{line}: {where} may only assign constants (literals, type aliases, TypedDicts); "
            "move computed values into __init__ or a method."
        )
        return
    kind = ast.unparse(node).splitlines()[0][:40]
    out.append(
        f"{line}: `{kind}` in {where} runs at import time; only imports, class and "
        "function definitions, constant assignments and docstrings are allowed there."
    )


@dataclass(frozen=True)
class Findings:
    """The problems of an environment module, split by what the OS layers can contain (see the module
    docstring): `refusals` never run, `warnings` may run under the layers."""

    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_source(source: str, class_name: str | None = None) -> list[str]:
    """Static-check problems of an environment module ([] = clean). Never executes the code.

    When class_name is given, the module must define exactly one top-level class with that name.
    """
    findings = check_findings(source, class_name)
    return sorted(set(findings.refusals + findings.warnings), key=_line_key)


def check_findings(source: str, class_name: str | None = None) -> Findings:
    """check_source's problems, split into refusals and the warnings the OS layers contain."""
    try:
        tree = parsed_source(source)
    except SyntaxError as exc:
        return Findings([f"line {exc.lineno}: syntax error: {exc.msg}. Fix the code so it parses as Python 3.11."])
    containable: list[str] = []  # work at import time runs in the confined server process, once
    for node in tree.body:
        _check_definition_time(node, containable, "module level")
    checker = _BodyChecker()
    checker.visit(tree)
    refused = [p for p in checker.problems if p not in checker.containable]
    containable += [p for p in checker.problems if p in checker.containable]
    if class_name is not None:
        matches = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
        if not matches:
            classes = ", ".join(n.name for n in tree.body if isinstance(n, ast.ClassDef)) or "none"
            refused.append(
                f"class '{class_name}' is not defined at module level (classes found: {classes}); "
                "set class_name to the environment class."
            )
        elif len(matches) > 1:
            refused.append(
                f"class '{class_name}' is defined {len(matches)} times; keep exactly one definition."
            )
        else:
            bases = [ast.unparse(b) for b in matches[0].bases if ast.unparse(b) != "object"]
            if bases or matches[0].keywords:
                parents = ", ".join(bases) or "a metaclass"
                local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
                (containable if bases and not matches[0].keywords and set(bases) <= local else refused).append(
                    f"line {matches[0].lineno}: class '{class_name}' inherits from {parents}; "
                    "an environment class stands alone, so define every tool in it."
                )
            refused.extend(_class_shape_problems(matches[0]))
    refusals = sorted(set(refused), key=_line_key)
    return Findings(refusals, sorted(set(containable) - set(refusals), key=_line_key))


def _class_shape_problems(cls: ast.ClassDef) -> list[str]:
    """Methods defined twice, and methods hidden by a state attribute of the same name."""
    problems = []
    seen: dict[str, int] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            if node.name in seen:
                problems.append(
                    f"line {node.lineno}: method '{node.name}' is defined again (first at line "
                    f"{seen[node.name]}); only the last definition counts, so remove the other."
                )
            seen.setdefault(node.name, node.lineno)
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    for sub in ast.walk(init) if init is not None else []:
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.ctx, ast.Store)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "self"
            and sub.attr in seen
            and sub.attr != "__init__"
        ):
            problems.append(
                f"line {sub.lineno}: attribute 'self.{sub.attr}' hides the method '{sub.attr}' "
                "(an instance attribute wins over a method); rename one of them."
            )
    return problems


def _line_key(problem: str) -> tuple[int, str]:
    m = re.match(r"line (\d+)", problem)
    return (int(m.group(1)) if m else 10**9, problem)


def check_determinism(source: str) -> list[str]:
    """Calls that make replays differ (datetime.now(), uuid4(), time.time() …); [] when none.

    Bundled environments must pass this; imported ones get the problems as notes.
    """
    try:
        tree = parsed_source(source)
    except SyntaxError:
        return []
    problems = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _NONDETERMINISTIC
        ):
            problems.append(
                f"line {node.lineno}: {_NONDETERMINISTIC[node.func.attr]} is not deterministic; "
                "keep 'today' or id counters in the state instead."
            )
    return problems


def check_state_jsonable(state: Any, *, limit: int = 20) -> list[str]:
    """Where a state is not plain JSON (string keys; str, int, finite float, bool, None, list, dict)."""
    problems: list[str] = []
    if not isinstance(state, dict):
        return [f"state must be a JSON object keyed by attribute name, got {type(state).__name__}."]
    if plain_json(state):  # the common case, without building a path for every value
        return []

    def walk(value: Any, path: str) -> None:
        if len(problems) >= limit:
            return
        if value is None or isinstance(value, bool | int | str):
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                problems.append(f"{path}: {value} is not a finite number; JSON cannot store it.")
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
            return
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    problems.append(
                        f"{path}: key {key!r} is a {type(key).__name__}; JSON object keys are strings."
                    )
                walk(item, f"{path}[{key!r}]")
            return
        problems.append(
            f"{path}: a {type(value).__name__} is not JSON; store it as a string, number, "
            "list or object (e.g. an ISO-8601 string for a date, a list for a set)."
        )

    for key, value in state.items():
        walk(value, str(key))
    return problems
