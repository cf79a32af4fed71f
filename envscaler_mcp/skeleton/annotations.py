"""Python type annotations (as AST) -> JSON Schema (2020-12), without executing any code.

The module's own TypedDicts, Enums and simple type aliases are resolved from its source, so an
annotation like `Dict[str, OrderInfo]` becomes an object whose values have OrderInfo's fields.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "bytes": {"type": "string"},
    "None": {"type": "null"},
    "NoneType": {"type": "null"},
    "Any": {},
    "object": {},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "time": {"type": "string", "format": "time"},
    "Decimal": {"type": "number"},
}
_ARRAYS = {
    "list",
    "List",
    "Sequence",
    "MutableSequence",
    "Iterable",
    "Collection",
    "set",
    "Set",
    "frozenset",
    "FrozenSet",
    "AbstractSet",
    "MutableSet",
    "deque",
    "Deque",
}
_SETS = {"set", "Set", "frozenset", "FrozenSet", "AbstractSet", "MutableSet"}
_TUPLES = {"tuple", "Tuple"}
_OBJECTS = {
    "dict",
    "Dict",
    "Mapping",
    "MutableMapping",
    "DefaultDict",
    "defaultdict",
    "OrderedDict",
    "Counter",
    "TypedDict",
}
_WRAPPERS = {"Required", "NotRequired", "ReadOnly", "Final", "ClassVar", "Annotated"}


@dataclass
class TypedDictDef:
    """A TypedDict found in the module: its fields (in order) and which of them are required."""

    name: str
    fields: dict[str, ast.expr] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    doc: str = ""


@dataclass
class ModuleTypes:
    """Named types a module defines: TypedDicts, Enums (value lists) and aliases (name -> expression)."""

    typeddicts: dict[str, TypedDictDef] = field(default_factory=dict)
    enums: dict[str, list[Any]] = field(default_factory=dict)
    aliases: dict[str, ast.expr] = field(default_factory=dict)


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_total_false(keywords: list[ast.keyword]) -> bool:
    return any(
        k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False for k in keywords
    )


def _field_is_required(ann: ast.expr, total: bool) -> bool:
    if isinstance(ann, ast.Subscript):
        wrapper = _base_name(ann.value)
        if wrapper == "NotRequired":
            return False
        if wrapper == "Required":
            return True
    return total


def collect_module_types(tree: ast.Module) -> ModuleTypes:
    """Find the TypedDicts, Enums and type aliases defined at the top level of a module."""
    types = ModuleTypes()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = [_base_name(b) for b in node.bases]
            if "TypedDict" in bases or any(b in types.typeddicts for b in bases):
                td = TypedDictDef(node.name, doc=ast.get_docstring(node) or "")
                for b in bases:  # inherited fields first, as typing does
                    if b in types.typeddicts:
                        parent = types.typeddicts[b]
                        td.fields.update(parent.fields)
                        td.required.extend(r for r in parent.required if r not in td.required)
                total = not _is_total_false(node.keywords)
                for stmt in node.body:
                    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                        td.fields[stmt.target.id] = stmt.annotation
                        if _field_is_required(stmt.annotation, total):
                            td.required.append(stmt.target.id)
                types.typeddicts[node.name] = td
            elif any(b.endswith("Enum") for b in bases):
                values = []
                for stmt in node.body:
                    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant):
                        values.append(stmt.value.value)
                types.enums[node.name] = values
        elif (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            name, value = node.targets[0].id, node.value
            if isinstance(value, ast.Call) and _base_name(value.func) == "TypedDict":
                types.typeddicts[name] = _functional_typeddict(name, value)
            elif _looks_like_type(value):
                types.aliases[name] = value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if _base_name(node.annotation) == "TypeAlias":
                types.aliases[node.target.id] = node.value
    return types


def _functional_typeddict(name: str, call: ast.Call) -> TypedDictDef:
    td = TypedDictDef(name)
    total = not _is_total_false(call.keywords)
    if len(call.args) >= 2 and isinstance(call.args[1], ast.Dict):
        for key, value in zip(call.args[1].keys, call.args[1].values, strict=False):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                td.fields[key.value] = value
                if _field_is_required(value, total):
                    td.required.append(key.value)
    return td


def _looks_like_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Subscript):
        return _base_name(node.value) in (_ARRAYS | _OBJECTS | _TUPLES | {"Optional", "Union", "Literal"})
    if isinstance(node, ast.Name):
        return node.id in _SCALARS or node.id in _ARRAYS or node.id in _OBJECTS
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _looks_like_type(node.left) or _looks_like_type(node.right)
    return False


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    sl = node.slice
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]


def _union(members: list[dict[str, Any]]) -> dict[str, Any]:
    """anyOf of the members, collapsed into a `type` list when every member is a bare type."""
    flat: list[dict[str, Any]] = []
    for m in members:
        subs = m["anyOf"] if set(m) == {"anyOf"} else [m]
        for sub in subs:
            if isinstance(sub.get("type"), list) and set(sub) == {"type"}:
                parts = [{"type": t} for t in sub["type"]]
            else:
                parts = [sub]
            for part in parts:
                if part not in flat:
                    flat.append(part)
    if any(m == {} for m in flat):
        return {}
    if len(flat) == 1:
        return flat[0]
    if all(set(m) == {"type"} and isinstance(m["type"], str) for m in flat):
        return {"type": [m["type"] for m in flat]}
    return {"anyOf": flat}


def make_nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema also accepting null (used for a `= None` default on a non-Optional annotation)."""
    return _union([schema, {"type": "null"}])


class AnnotationConverter:
    """Converts annotation expressions of one module into JSON Schemas."""

    def __init__(self, types: ModuleTypes) -> None:
        self.types = types
        self._active: set[str] = set()

    def convert(self, node: ast.expr | None) -> dict[str, Any]:
        """JSON Schema of an annotation; unknown names become {} (anything)."""
        if node is None:
            return {}
        if isinstance(node, ast.Constant):
            if node.value is None:
                return {"type": "null"}
            if isinstance(node.value, str):  # a forward reference: "OrderInfo"
                try:
                    return self.convert(ast.parse(node.value, mode="eval").body)
                except SyntaxError:
                    return {}
            return {}
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union([self.convert(node.left), self.convert(node.right)])
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Name | ast.Attribute):
            return self._named(_base_name(node))
        return {}

    def _named(self, name: str) -> dict[str, Any]:
        if name in self.types.typeddicts:
            return self._typeddict(self.types.typeddicts[name])
        if name in self.types.enums:
            return _enum(self.types.enums[name])
        if name in self.types.aliases and name not in self._active:
            self._active.add(name)
            try:
                return self.convert(self.types.aliases[name])
            finally:
                self._active.discard(name)
        if name in _SCALARS:
            return dict(_SCALARS[name])
        if name in _SETS:
            return {"type": "array", "items": {}, "uniqueItems": True}
        if name in _ARRAYS or name in _TUPLES:
            return {"type": "array", "items": {}}
        if name in _OBJECTS:
            return {"type": "object"}
        return {}

    def _subscript(self, node: ast.Subscript) -> dict[str, Any]:
        base = _base_name(node.value)
        args = _subscript_args(node)
        if base == "Optional":
            return _union([self.convert(args[0]), {"type": "null"}])
        if base == "Union":
            return _union([self.convert(a) for a in args])
        if base == "Literal":
            return _enum([a.value for a in args if isinstance(a, ast.Constant)])
        if base in _WRAPPERS:
            return self.convert(args[0])
        if base in _SETS:
            return {"type": "array", "items": self.convert(args[0]), "uniqueItems": True}
        if base in _ARRAYS:
            return {"type": "array", "items": self.convert(args[0])}
        if base in _TUPLES:
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
                return {"type": "array", "items": self.convert(args[0])}
            items = [self.convert(a) for a in args]
            return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
        if base in _OBJECTS:
            if base == "Counter":
                return {"type": "object", "additionalProperties": {"type": "integer"}}
            if len(args) < 2:
                return {"type": "object"}
            return {"type": "object", "additionalProperties": self.convert(args[1])}
        if base == "Type":
            return {}
        return self._named(base)

    def _typeddict(self, td: TypedDictDef) -> dict[str, Any]:
        if td.name in self._active:  # recursive TypedDict: stop at an untyped object
            return {"type": "object"}
        self._active.add(td.name)
        try:
            props = {name: self.convert(ann) for name, ann in td.fields.items()}
        finally:
            self._active.discard(td.name)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": props,
            "required": list(td.required),
            "additionalProperties": False,
        }
        return schema


def _enum(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": list(values)}
    kinds = {type(v) for v in values}
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if len(kinds) == 1 and next(iter(kinds)) in names:
        schema = {"type": names[next(iter(kinds))], "enum": list(values)}
    return schema


def annotation_text(node: ast.expr | None) -> str:
    """The annotation as source text ('' when missing)."""
    return "" if node is None else ast.unparse(node)
