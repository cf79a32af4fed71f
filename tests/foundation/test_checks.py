"""Static checks on environment source and the JSON check on states."""

from __future__ import annotations

import pytest

from envscaler_mcp.skeleton.checks import check_determinism, check_source, check_state_jsonable

CLEAN = '''"""A clean environment."""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Dict, TypedDict

EMAIL = re.compile(r"^[^@]+@[^@]+$")
LIMIT = 10
Ids = Dict[str, int]
Point = TypedDict("Point", {"x": int})


class Info(TypedDict, total=False):
    name: str


class Env:
    """The environment."""

    MAX: int = 5

    def __init__(self, init_config: dict = None):
        self.items: Dict[str, Info] = {}

    @staticmethod
    def helper(x: int = -1) -> int:
        return x

    def get(self, key: str, default: str = "x") -> dict:
        value = getattr(self, "items")
        return {"success": True, "data": value.get(key, default)}
'''


def test_clean_source_has_no_problems() -> None:
    assert check_source(CLEAN, "Env") == []


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("import os", "import of 'os' is not allowed"),
        ("import random", "import of 'random' is not allowed"),
        ("from subprocess import run", "import of 'subprocess'"),
        ("from . import sibling", "relative imports"),
        ("from typing import *", "import *"),
        ("x = compute()", "may only assign constants"),
        ("print('hi')", "runs at import time"),
        ("if True:\n    pass", "runs at import time"),
        ("for i in range(3):\n    pass", "runs at import time"),
        ("@weird\ndef f():\n    pass", "decorator 'weird'"),
        ("def f(x=make()):\n    pass", "must be a literal"),
        ("def f(x: make()):\n    pass", "must be a type expression"),
        ("class C(make()):\n    pass", "class 'C' must be a name"),
        ("class C:\n    x = make()", "class 'C' may only assign constants"),
        ("def f():\n    eval('1')", "call of 'eval()'"),
        ("def f():\n    exec('1')", "call of 'exec()'"),
        ("def f():\n    compile('1', 'x', 'exec')", "call of 'compile()'"),
        ("def f():\n    open('/etc/passwd')", "call of 'open()'"),
        ("def f():\n    __import__('os')", "'__import__"),
        ("def f():\n    globals()", "call of 'globals()'"),
        ("def f():\n    locals()", "call of 'locals()'"),
        ("def f(o: int):\n    vars(o)", "call of 'vars()'"),
        ("def f(o: int):\n    setattr(o, 'a', 1)", "call of 'setattr()'"),
        ("def f(o: int):\n    delattr(o, 'a')", "call of 'delattr()'"),
        ("def f():\n    input()", "call of 'input()'"),
        ("def f():\n    breakpoint()", "call of 'breakpoint()'"),
        ("def f(o: int):\n    getattr(o, '__class__')", "reaches a dunder"),
        ("def f(o: int, n: str):\n    getattr(o, n)", "computed attribute name"),
        ("def f(o: int):\n    return o.__class__", "dunder attribute '.__class__'"),
        ("def f(o: int):\n    return o.__globals__", "dunder attribute '.__globals__'"),
        ("def f():\n    return __builtins__", "use of '__builtins__'"),
        ("class C:\n    async def g(self):\n        pass", "async method 'g'"),
        ("def f():\n  return (", "syntax error"),
    ],
)
def test_rejections_name_the_line_and_the_problem(snippet: str, expected: str) -> None:
    src = "class Env:\n    pass\n\n" + snippet + "\n"
    problems = check_source(src, "Env")
    assert any(expected in p for p in problems), problems
    assert all(p.startswith("line ") for p in problems)


def test_class_must_exist_exactly_once() -> None:
    assert any("not defined" in p and "Other" in p for p in check_source("class Other:\n    pass\n", "Env"))
    twice = "class Env:\n    pass\n\nclass Env:\n    pass\n"
    assert any("2 times" in p for p in check_source(twice, "Env"))
    assert check_source("class Env:\n    pass\n") == []


def test_determinism_check() -> None:
    src = "import datetime, uuid\nclass E:\n    def f(self):\n        return datetime.datetime.now(), uuid.uuid4()\n"
    problems = check_determinism(src)
    assert len(problems) == 2 and "line 4" in problems[0]
    assert check_determinism(CLEAN) == []


def test_state_jsonable() -> None:
    assert check_state_jsonable({"a": {"b": [1, 2.5, None, True, "x"]}}) == []
    problems = check_state_jsonable({"a": {1: "x", "b": float("nan"), "c": {1, 2}}})
    assert len(problems) == 3
    assert any("key 1" in p for p in problems) and any("nan" in p for p in problems)
    assert any("set" in p for p in problems)
    assert check_state_jsonable([1]) != []


def test_environment_class_must_not_inherit() -> None:
    src = "class Base:\n    def tool(self) -> dict:\n        return {}\n\nclass Env(Base):\n    pass\n"
    assert any("inherits from Base" in p for p in check_source(src, "Env"))
    assert check_source("class Env(object):\n    pass\n", "Env") == []


def test_redefined_methods_and_attributes_hiding_methods() -> None:
    src = (
        "class Env:\n    def __init__(self):\n        self.orders = {}\n\n"
        "    def orders(self) -> dict:\n        return {}\n\n"
        "    def get(self) -> dict:\n        return {}\n\n"
        "    def get(self, k: str) -> dict:\n        return {}\n"
    )
    problems = check_source(src, "Env")
    assert any("'self.orders' hides the method 'orders'" in p for p in problems)
    assert any("line 11: method 'get' is defined again (first at line 8)" in p for p in problems)
