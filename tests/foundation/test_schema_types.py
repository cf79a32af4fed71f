"""Type annotation -> JSON Schema mapping of tool parameters and state attributes."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.skeleton.schema import extract_state, extract_tools

HEADER = """
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Set, Tuple, TypedDict, Union
from typing_extensions import NotRequired
from enum import Enum

OrderId = str

class Item(TypedDict):
    sku: str
    qty: int

class Extra(TypedDict, total=False):
    note: str
    score: float

class Mixed(TypedDict):
    a: int
    b: NotRequired[str]

class Color(str, Enum):
    RED = "red"
    BLUE = "blue"

Point = TypedDict("Point", {"x": int, "y": int})
"""


def _param_schema(annotation: str, default: str | None = None) -> dict[str, Any]:
    suffix = f" = {default}" if default is not None else ""
    src = (
        HEADER + f"\nclass Env:\n    def tool(self, p: {annotation}{suffix}) -> dict:\n        return {{}}\n"
    )
    (tool,) = extract_tools(src, "Env")
    return tool.input_schema["properties"]["p"]


ITEM = {
    "type": "object",
    "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
    "required": ["sku", "qty"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("str", {"type": "string"}),
        ("int", {"type": "integer"}),
        ("float", {"type": "number"}),
        ("bool", {"type": "boolean"}),
        ("Any", {}),
        ("List[int]", {"type": "array", "items": {"type": "integer"}}),
        ("list[str]", {"type": "array", "items": {"type": "string"}}),
        ("Sequence[float]", {"type": "array", "items": {"type": "number"}}),
        ("list", {"type": "array", "items": {}}),
        ("Set[str]", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        ("Tuple[int, ...]", {"type": "array", "items": {"type": "integer"}}),
        (
            "Tuple[int, str]",
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        ("Dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            "dict[str, List[str]]",
            {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
        ),
        ("Mapping[str, Any]", {"type": "object", "additionalProperties": {}}),
        ("dict", {"type": "object"}),
        ("Optional[int]", {"type": ["integer", "null"]}),
        ("int | None", {"type": ["integer", "null"]}),
        ("Optional[Item]", {"anyOf": [ITEM, {"type": "null"}]}),
        ("Union[int, str]", {"type": ["integer", "string"]}),
        ("Union[int, Item]", {"anyOf": [{"type": "integer"}, ITEM]}),
        ("Union[int, Any]", {}),
        ("Literal['a', 'b']", {"type": "string", "enum": ["a", "b"]}),
        ("Literal[1, 'x']", {"enum": [1, "x"]}),
        ("Item", ITEM),
        ("'Item'", ITEM),
        ("List[Item]", {"type": "array", "items": ITEM}),
        (
            "Extra",
            {
                "type": "object",
                "properties": {"note": {"type": "string"}, "score": {"type": "number"}},
                "required": [],
                "additionalProperties": False,
            },
        ),
        (
            "Mixed",
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": False,
            },
        ),
        (
            "Point",
            {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
        ),
        ("Color", {"type": "string", "enum": ["red", "blue"]}),
        ("OrderId", {"type": "string"}),
        ("SomethingUnknown", {}),
    ],
)
def test_type_mapping(annotation: str, expected: dict[str, Any]) -> None:
    assert _param_schema(annotation) == expected


def test_defaults_make_parameters_optional_and_appear_in_the_schema() -> None:
    src = (
        HEADER
        + """
class Env:
    def tool(self, a: str, b: int = 3, c: Optional[str] = None, d: str = None, e: List[str] = ["x"],
             f: float = float("inf"), *, g: bool = True, h: str) -> dict:
        return {}
"""
    )
    (tool,) = extract_tools(src, "Env")
    props = tool.input_schema["properties"]
    assert tool.input_schema["required"] == ["a", "h"]
    assert list(props) == ["a", "b", "c", "d", "e", "f", "g", "h"]
    assert props["b"] == {"type": "integer", "default": 3}
    assert props["c"] == {"type": ["string", "null"], "default": None}
    assert props["d"] == {"type": ["string", "null"], "default": None}  # `= None` admits null
    assert props["e"] == {"type": "array", "items": {"type": "string"}, "default": ["x"]}
    assert props["f"] == {"type": "number"}  # not a JSON-able literal: optional, no default shown
    assert props["g"] == {"type": "boolean", "default": True}
    assert tool.input_schema["additionalProperties"] is False
    assert tool.input_schema["type"] == "object"


def test_unannotated_parameter_names_class_method_and_parameter() -> None:
    src = "class Shop:\n    def cancel(self, order_id, reason: str) -> dict:\n        return {}\n"
    with pytest.raises(EnvironmentCodeError) as info:
        extract_tools(src, "Shop")
    msg = str(info.value)
    assert "Shop" in msg and "cancel" in msg and "order_id" in msg


@pytest.mark.parametrize("signature", ["self, *args: int", "self, **kw: int", "self, a: int, /"])
def test_star_and_positional_only_parameters_are_rejected(signature: str) -> None:
    src = f"class Env:\n    def tool({signature}) -> dict:\n        return {{}}\n"
    with pytest.raises(EnvironmentCodeError, match=r"Env\.tool"):
        extract_tools(src, "Env")


def test_state_attributes_with_and_without_annotations() -> None:
    src = (
        HEADER
        + """
class Env:
    counter: int

    def __init__(self, init_config: dict = None):
        self.items: Dict[str, Item] = {}  # items by sku
        self.log = []
        self._private = {}
        self.counter = 0
        self.init_config = init_config
"""
    )
    state = {a.name: a for a in extract_state(src, "Env")}
    assert list(state) == ["items", "log", "counter", "init_config"]
    assert state["items"].json_schema == {"type": "object", "additionalProperties": ITEM}
    assert state["items"].type == "Dict[str, Item]"
    assert state["items"].description == "items by sku"
    assert state["log"].json_schema == {} and state["log"].type == "list"
    assert state["counter"].json_schema == {"type": "integer"}  # from the class-level annotation


def test_no_init_means_no_state() -> None:
    assert extract_state("class Env:\n    def a(self) -> int:\n        return 1\n", "Env") == []


def test_missing_class_lists_the_classes_found() -> None:
    with pytest.raises(EnvironmentCodeError, match="classes found: Other"):
        extract_tools("class Other:\n    pass\n", "Env")


def test_state_from_tuple_assignment_and_nested_blocks() -> None:
    src = (
        "class Env:\n    def __init__(self, init_config: dict = None):\n"
        "        self.a, (self.b, self.c) = {}, ([], 'x')\n"
        "        if init_config:\n            self.d: int = 0\n"
    )
    state = {a.name: a for a in extract_state(src, "Env")}
    assert list(state) == ["a", "b", "c", "d"]
    assert [state[n].type for n in "abcd"] == ["dict", "list", "str", "int"]
