"""What a validator may use: restricted builtins, whitelisted module views, and a static check of its source.

Used only inside the worker process (standard library only). These Python-level restrictions are the
first gate: they make the common mistakes and the well-known escapes fail with a clear reason. The
boundary is the OS (isolation/confine_validators.py): a validator that gets past this gate still cannot open a file,
a socket or a process, or reach another scenario's checks.
"""

from __future__ import annotations

import abc
import ast
import builtins
import decimal
import importlib
import operator
import types
from typing import Any

ALLOWED_MODULES = (
    "datetime", "re", "math", "json", "copy", "collections", "collections.abc", "itertools", "functools",
    "statistics", "decimal", "string", "operator", "typing", "transcript_checks",
)

# Import names validators use for our own helper modules; their views hold only the names in `__all__`.
_OWN_MODULES = {"transcript_checks": "envscaler_mcp.transcript.checks"}

# Names that would hand a validator a way back to unrestricted objects (evaluating strings, reading fields).
_DROPPED_MEMBERS = {
    "typing": {"get_type_hints", "ForwardRef"},
    "string": {"Formatter"},
    # register() resolves string annotations with typing.get_type_hints, i.e. evaluates them unrestricted
    "functools": {"singledispatch", "singledispatchmethod"},
}

# Attributes that lead from an ordinary object to frames, code or globals.
_BLOCKED_ATTRIBUTES = {
    "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "f_globals", "f_locals",
    "f_builtins", "f_back", "f_code", "tb_frame", "tb_next", "func_globals", "func_code", "mro",
}

_SAFE_BUILTINS = (
    "abs", "all", "any", "ascii", "bin", "bool", "bytearray", "bytes", "callable", "chr", "classmethod",
    "complex", "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "hash", "hex", "id",
    "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min", "next", "object", "oct",
    "ord", "pow", "property", "range", "repr", "reversed", "round", "set", "slice", "sorted", "staticmethod",
    "str", "sum", "tuple", "type", "zip", "__build_class__", "True", "False", "None", "Ellipsis",
    "NotImplemented",
)

FORBIDDEN_CALLS = (
    "open", "exec", "eval", "compile", "input", "breakpoint", "globals", "locals", "vars", "memoryview",
    "help", "exit", "quit", "setattr", "delattr", "super",
)


class SandboxViolation(Exception):
    """A validator used something validators may not use; its message is the recorded reason."""


class ImportNotAllowed(SandboxViolation, ImportError):
    """A validator imported a module outside the whitelist."""


def _is_private(name: object) -> bool:
    return isinstance(name, str) and (name.startswith("_") or name in _BLOCKED_ATTRIBUTES)


def _safe_getattr(obj: Any, name: str, *default: Any) -> Any:
    if _is_private(name):
        raise SandboxViolation(f"access to attribute '{name}' is not allowed")
    return getattr(obj, name, *default)


def _safe_hasattr(obj: Any, name: str) -> bool:
    if _is_private(name):
        raise SandboxViolation(f"access to attribute '{name}' is not allowed")
    return hasattr(obj, name)


def _checked_names(names: tuple[Any, ...]) -> None:
    for name in names:
        for part in str(name).split("."):
            if _is_private(part):
                raise SandboxViolation(f"access to attribute '{part}' is not allowed")


def _safe_attrgetter(*names: str) -> Any:
    _checked_names(names)
    return operator.attrgetter(*names)


def _safe_methodcaller(name: str, *args: Any, **kwargs: Any) -> Any:
    _checked_names((name,))
    return operator.methodcaller(name, *args, **kwargs)


def _forbidden(name: str) -> Any:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise SandboxViolation(f"{name}() is not allowed in validators")

    refuse.__name__ = name
    return refuse


def _module_view(name: str, views: dict[str, types.ModuleType]) -> types.ModuleType:
    """A module object holding only the public, non-module members of a whitelisted module."""
    real = importlib.import_module(_OWN_MODULES.get(name, name))
    view = types.ModuleType(name, real.__doc__)
    dropped = _DROPPED_MEMBERS.get(name, set())
    for attr in getattr(real, "__all__", ()) if name in _OWN_MODULES else dir(real):
        if attr.startswith("_") or attr in dropped:
            continue
        value = getattr(real, attr)
        if isinstance(value, types.ModuleType):
            sub = f"{name}.{attr}"
            if sub in views:
                setattr(view, attr, views[sub])
            continue
        setattr(view, attr, value)
    if name == "operator":
        view.attrgetter = _safe_attrgetter  # type: ignore[attr-defined]
        view.methodcaller = _safe_methodcaller  # type: ignore[attr-defined]
    return view


def build_module_views() -> dict[str, types.ModuleType]:
    """Import every whitelisted module once (before file descriptors run out) and wrap it in a view."""
    views: dict[str, types.ModuleType] = {}
    for name in sorted(ALLOWED_MODULES, key=lambda n: -n.count(".")):  # submodules first
        views[name] = _module_view(name, views)
    return views


def interpreter_state(views: dict[str, types.ModuleType]) -> tuple[Any, ...]:
    """What checks share in a batch process besides their states, as identities and settings: each view's
    members, each class's attributes and each ABC's registered classes among them, the contents of mutable
    members, and the decimal contexts. Equal before and after some checks: those checks changed none of it, so
    a later check sees the interpreter a fresh batch process would give it (ValidatorSandbox.run_probes)."""
    parts: list[Any] = []
    for name, view in views.items():
        for attr, value in vars(view).items():
            parts.append((name, attr, id(value)))
            if isinstance(value, type):
                parts.append(tuple((k, id(v)) for k, v in vars(value).items()))
                if isinstance(value, abc.ABCMeta):
                    parts.append(frozenset(id(ref()) for ref in abc._get_dump(value)[0]))  # type: ignore[attr-defined]
            elif isinstance(value, dict):  # a value replaced under its own key counts too
                parts.append(tuple((id(k), id(v)) for k, v in value.items()))
            elif isinstance(value, list | set):
                parts.append(tuple(map(id, value)))
    contexts = (decimal.getcontext(), decimal.DefaultContext, decimal.BasicContext, decimal.ExtendedContext)
    return (*parts, *map(repr, contexts))


def make_builtins(views: dict[str, types.ModuleType]) -> dict[str, Any]:
    """The builtins a validator sees: safe functions, all exception classes, a whitelist-only import."""

    def restricted_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (),
                          level: int = 0) -> types.ModuleType:
        if level != 0:
            raise ImportNotAllowed("relative imports are not allowed in validators")
        if name not in views:
            raise ImportNotAllowed(f"import of '{name}' is not allowed")
        if fromlist:
            return views[name]
        return views[name.split(".")[0]]

    table: dict[str, Any] = {n: getattr(builtins, n) for n in _SAFE_BUILTINS}
    for n in dir(builtins):
        value = getattr(builtins, n)
        if isinstance(value, type) and issubclass(value, BaseException):
            table[n] = value
    for n in FORBIDDEN_CALLS:
        table[n] = _forbidden(n)
    table["getattr"] = _safe_getattr
    table["hasattr"] = _safe_hasattr
    table["print"] = lambda *args, **kwargs: None
    table["__import__"] = restricted_import
    return table


def static_problem(tree: ast.AST) -> str | None:
    """Why a validator's syntax tree is refused (dunder names, private or frame attributes), else None."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            return f"access to attribute '{node.attr}' is not allowed"
        if isinstance(node, ast.MatchClass):  # `case object(__class__=c)` reads attributes too
            for attr in node.kwd_attrs:
                if _is_private(attr):
                    return f"access to attribute '{attr}' is not allowed"
        if isinstance(node, ast.Name) and node.id.startswith("__") and node.id.endswith("__"):
            return f"use of the name '{node.id}' is not allowed"
    return None
