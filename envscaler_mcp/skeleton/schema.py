"""Tool and state schemas from an environment class's source, by static analysis (the code never runs)."""

from __future__ import annotations

import ast
import functools
import math
import re
from typing import Any

from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.skeleton._docstrings import parse_docstring
from envscaler_mcp.skeleton._effects import MethodEffects, class_effects, transitive_writes
from envscaler_mcp.skeleton.annotations import (
    AnnotationConverter,
    annotation_text,
    collect_module_types,
    make_nullable,
)
from envscaler_mcp.skeleton.models import EnvSkeleton, StateAttribute, ToolKind, ToolSpec

TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def parse_module(source: str, what: str = "environment source") -> ast.Module:
    """Parse source, turning a syntax error into an EnvironmentCodeError with the line. The tree of a source
    parsed recently is shared (an import reads one class several times): treat it as read-only."""
    try:
        return parsed_source(source)
    except SyntaxError as exc:
        raise EnvironmentCodeError(
            f"{what}: syntax error at line {exc.lineno}: {exc.msg}. "
            "Fix the code so that it parses as Python 3.11."
        ) from exc


@functools.lru_cache(maxsize=16)
def parsed_source(source: str) -> ast.Module:
    """The tree of `source` (SyntaxError as ast.parse), shared with the other readers of the same source: an
    import parses each class once for its checks, tools, state and entities. Read-only."""
    return ast.parse(source)


def find_class(tree: ast.Module, class_name: str) -> ast.ClassDef:
    """The top-level class called `class_name`, or EnvironmentCodeError listing the classes found."""
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for node in classes:
        if node.name == class_name:
            return node
    found = ", ".join(c.name for c in classes) or "none"
    raise EnvironmentCodeError(
        f"class '{class_name}' not found at the top level of the module "
        f"(classes found: {found}). Set class_name to the environment class."
    )


def _methods(cls: ast.ClassDef) -> list[ast.FunctionDef]:
    """The class's methods as Python sees them: a redefinition replaces the earlier one in its place."""
    by_name: dict[str, ast.FunctionDef] = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            by_name[node.name] = node
    return list(by_name.values())


def _decorators(func: ast.FunctionDef) -> set[str]:
    names = set()
    for d in func.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def is_tool_method(func: ast.FunctionDef) -> bool:
    """Public, not __init__, not a property: a method the agent may call."""
    if func.name.startswith("_"):
        return False
    return not (_decorators(func) & {"property", "cached_property", "setter", "getter", "deleter"})


def _jsonable_default(node: ast.expr) -> tuple[bool, Any]:
    """(True, value) when the default is a literal that JSON can represent exactly."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None

    def ok(v: Any) -> bool:
        if v is None or isinstance(v, bool | int | str):
            return True
        if isinstance(v, float):
            return math.isfinite(v)
        if isinstance(v, list | tuple):
            return all(ok(x) for x in v)
        if isinstance(v, dict):
            return all(isinstance(k, str) and ok(x) for k, x in v.items())
        return False

    if not ok(value):
        return False, None

    def norm(v: Any) -> Any:
        if isinstance(v, tuple | list):
            return [norm(x) for x in v]
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        return v

    return True, norm(value)


def _where(class_name: str, func: ast.FunctionDef) -> str:
    return f"{class_name}.{func.name} (line {func.lineno})"


def tool_input_schema(
    func: ast.FunctionDef, class_name: str, conv: AnnotationConverter, param_docs: dict[str, str]
) -> dict[str, Any]:
    """JSON Schema of a method's arguments (self excluded)."""
    args = func.args
    where = _where(class_name, func)
    if args.vararg or args.kwarg:
        star = f"*{args.vararg.arg}" if args.vararg else f"**{args.kwarg.arg}"  # type: ignore[union-attr]
        raise EnvironmentCodeError(
            f"{where}: parameter '{star}' is not allowed in a tool; "
            "declare each argument as a named, annotated parameter."
        )
    if args.posonlyargs:
        raise EnvironmentCodeError(
            f"{where}: positional-only parameters ('/') cannot be passed by name; remove the '/'."
        )
    positional = list(args.args)
    if "staticmethod" not in _decorators(func):
        if not positional:
            raise EnvironmentCodeError(f"{where}: a method needs 'self' as its first parameter.")
        positional = positional[1:]
    defaults: dict[str, ast.expr] = {}
    for arg, default in zip(reversed(positional), reversed(args.defaults), strict=False):
        defaults[arg.arg] = default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if kw_default is not None:
            defaults[arg.arg] = kw_default
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg in positional + list(args.kwonlyargs):
        if arg.annotation is None:
            raise EnvironmentCodeError(
                f"class '{class_name}', method '{func.name}' (line {func.lineno}): parameter '{arg.arg}' "
                "has no type annotation. Annotate it (e.g. `"
                + arg.arg
                + ": str`) so a schema can be derived."
            )
        prop = conv.convert(arg.annotation)
        if arg.arg in defaults:
            has_value, value = _jsonable_default(defaults[arg.arg])
            if has_value:
                if value is None:
                    prop = make_nullable(prop)
                prop = {**prop, "default": value}
        else:
            required.append(arg.arg)
        if param_docs.get(arg.arg):
            prop = {**prop, "description": param_docs[arg.arg]}
        properties[arg.arg] = prop
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@functools.lru_cache(maxsize=16)
def _class_effects(source: str, class_name: str) -> dict[str, MethodEffects]:
    """What each method of the class touches; worked out once per source (an import asks for the tools and for
    EnvScaler's env_structure of each class, and a catalog may hold one class under many ids): read-only."""
    tree = parse_module(source)
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    return class_effects(_methods(find_class(tree, class_name)), functions)


def extract_tools(source: str, class_name: str) -> list[ToolSpec]:
    """The class's public methods as tools, in source order, with schemas, descriptions and kinds.

    Raises EnvironmentCodeError naming the class, method and parameter when a schema cannot be derived.
    """
    tree = parse_module(source)
    cls = find_class(tree, class_name)
    conv = AnnotationConverter(collect_module_types(tree))
    effects = _class_effects(source, class_name)
    tools: list[ToolSpec] = []
    for func in _methods(cls):
        if not is_tool_method(func):
            continue
        if not TOOL_NAME_RE.match(func.name):
            raise EnvironmentCodeError(
                f"{_where(class_name, func)}: tool name '{func.name}' must match "
                "^[a-zA-Z0-9_-]{1,64}$; rename the method."
            )
        doc = parse_docstring(ast.get_docstring(func))
        kind: ToolKind = "state_change" if transitive_writes(effects, func.name) else "query"
        tools.append(
            ToolSpec(
                name=func.name,
                description=doc.description or func.name.replace("_", " "),
                input_schema=tool_input_schema(func, class_name, conv, doc.params),
                kind=kind,
            )
        )
    return tools


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((m for m in _methods(cls) if m.name == "__init__"), None)


def _trailing_comment(source_lines: list[str], lineno: int) -> str:
    line = source_lines[lineno - 1] if 0 < lineno <= len(source_lines) else ""
    if "#" in line:
        return line.split("#", 1)[1].strip()
    return ""


def _value_type_text(value: ast.expr | None) -> str:
    if isinstance(value, ast.Dict | ast.DictComp):
        return "dict"
    if isinstance(value, ast.List | ast.ListComp):
        return "list"
    if isinstance(value, ast.Constant) and value.value is not None:
        return type(value.value).__name__
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in {"dict", "list"}:
        return value.func.id
    return ""


def _self_targets(init: ast.FunctionDef) -> list[tuple[ast.Attribute, ast.expr | None, ast.expr | None]]:
    """(`self.x` target, annotation, value) of every assignment in __init__, in source order."""
    found: list[tuple[ast.Attribute, ast.expr | None, ast.expr | None]] = []
    for node in ast.walk(init):
        pairs: list[tuple[ast.expr, ast.expr | None, ast.expr | None]] = []
        if isinstance(node, ast.AnnAssign):
            pairs = [(node.target, node.annotation, node.value)]
        elif isinstance(node, ast.Assign):
            pairs = [(t, None, node.value) for t in node.targets]
        while any(isinstance(t, ast.Tuple | ast.List) for t, _, _ in pairs):  # self.a, self.b = {}, []
            flat: list[tuple[ast.expr, ast.expr | None, ast.expr | None]] = []
            for target, ann, value in pairs:
                if isinstance(target, ast.Tuple | ast.List):
                    same_shape = isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts)
                    for k, elt in enumerate(target.elts):
                        flat.append((elt, None, value.elts[k] if same_shape else None))  # type: ignore[union-attr]
                else:
                    flat.append((target, ann, value))
            pairs = flat
        for target, ann, value in pairs:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                found.append((target, ann, value))
    return sorted(found, key=lambda item: (item[0].lineno, item[0].col_offset))


def state_annotations(cls: ast.ClassDef) -> dict[str, tuple[ast.expr | None, ast.expr | None]]:
    """Every attribute assigned on self in __init__ -> (annotation, first value), in source order.

    The annotation comes from any annotated assignment in __init__, else from a class-level annotation.
    """
    class_ann = {
        s.target.id: s.annotation
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }
    init = _init(cls)
    result: dict[str, tuple[ast.expr | None, ast.expr | None]] = {}
    for target, ann, value in _self_targets(init) if init is not None else []:
        prev_ann, prev_value = result.get(target.attr, (None, None))
        result[target.attr] = (prev_ann or ann, prev_value if target.attr in result else value)
    return {name: (ann or class_ann.get(name), value) for name, (ann, value) in result.items()}


def extract_state(source: str, class_name: str) -> list[StateAttribute]:
    """Public instance attributes assigned in __init__ (the state), with schemas from their annotations.

    An unannotated attribute gets the schema {} (anything) and a type guessed from its initial value.
    """
    tree = parse_module(source)
    cls = find_class(tree, class_name)
    conv = AnnotationConverter(collect_module_types(tree))
    lines = source.splitlines()
    init = _init(cls)
    first_line = {t.attr: t.lineno for t, _, _ in reversed(_self_targets(init))} if init else {}
    attrs: list[StateAttribute] = []
    for name, (ann, value) in state_annotations(cls).items():
        if name.startswith("_"):
            continue
        attrs.append(
            StateAttribute(
                name=name,
                type=annotation_text(ann) if ann is not None else _value_type_text(value),
                json_schema=conv.convert(ann) if ann is not None else {},
                description=_trailing_comment(lines, first_line.get(name, 0)),
            )
        )
    return attrs


def state_schema(target: EnvSkeleton | list[StateAttribute]) -> dict[str, Any]:
    """JSON Schema of a whole state object: every state attribute is a property.

    Attributes are not required (a state may omit one; the class's __init__ value stays), and unknown
    top-level keys are rejected because loading them would create attributes the class never declared.
    """
    attrs = target.state if isinstance(target, EnvSkeleton) else target
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {a.name: a.json_schema for a in attrs},
        "additionalProperties": False,
    }


def env_structure(source: str, class_name: str) -> dict[str, Any]:
    """EnvScaler's `env_structure`: {states: {attr: {type, used_by, modified_by}},
    methods: {name: {calls, reads, writes}}} (direct effects per method; __init__ excluded)."""
    tree = parse_module(source)
    cls = find_class(tree, class_name)
    states: dict[str, dict[str, Any]] = {
        name: {
            "type": annotation_text(ann) if ann is not None else (_value_type_text(value) or "Any"),
            "used_by": [],
            "modified_by": [],
        }
        for name, (ann, value) in state_annotations(cls).items()
    }
    methods: dict[str, dict[str, list[str]]] = {}
    effects = _class_effects(source, class_name)
    method_names = {m.name for m in _methods(cls)}
    for func in _methods(cls):
        if func.name == "__init__":
            continue
        fx = effects[func.name]
        methods[func.name] = {
            "calls": [c for c in fx.calls if c in method_names],
            "reads": [r for r in fx.reads if r not in method_names],
            "writes": list(fx.writes),
        }
        for attr in methods[func.name]["reads"]:
            if attr in states and func.name not in states[attr]["used_by"]:
                states[attr]["used_by"].append(func.name)
        for attr in fx.writes:
            if attr in states and func.name not in states[attr]["modified_by"]:
                states[attr]["modified_by"].append(func.name)
    return {"states": states, "methods": methods}
