"""AST splicing of methods into the class, and the code checks fed back to the model."""

from __future__ import annotations

import ast

import pytest

from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.skel.assemble import assemble_class, method_source, parse_method_snippet
from envscaler_mcp.synth.skel.codecheck import accept_method, accept_skeleton, contract_problems
from envscaler_mcp.synth.skel.parsers import parse_method

from ..fixtures.skel_router import ANSWERS, fixture_class

BASE = '''"""Module doc."""
from typing import Dict
import re


class Shop:
    def __init__(self):
        # items by id
        self.items: Dict[str, int] = {}

    def count(self) -> dict:
        """Count items."""
        return {"success": True, "data": len(self.items)}


def unrelated() -> None:
    pass
'''


def test_snippet_forms():
    bare = parse_method_snippet("def get(self, x: str) -> dict:\n    return {}", "get")
    indented = parse_method_snippet("    import json\n    def get(self, x: str) -> dict:\n        return {}", "get")
    in_class = parse_method_snippet("class Shop:\n    def get(self, x: str) -> dict:\n        return {}\n"
                                    "    def _h(self):\n        return 1\n    def __init__(self):\n        pass", "get")
    assert bare.source == indented.source == in_class.source
    assert [type(n).__name__ for n in indented.imports] == ["Import"]
    assert list(in_class.helpers) == ["_h"]


@pytest.mark.parametrize(("code", "message"), [
    ("def get(self:\n  pass", "syntax error"),
    ("def other(self):\n    return {}", "must define the method `get`"),
    ("async def get(self):\n    return {}", "async"),
    ("def get(x):\n    return {}", "first parameter is `self`"),
    ("def get(self):\n    return {}\ndef helper(self):\n    return 1", "rename the helper"),
    ("X = 1\ndef get(self):\n    return {}", "only the method"),
])
def test_snippet_errors(code, message):
    with pytest.raises(AnswerFormatError, match=message):
        parse_method_snippet(code, "get")


def test_assemble_hoists_and_dedupes_imports_and_keeps_other_code():
    method = parse_method_snippet(
        "from typing import Dict, List\nimport re\n"
        "def names(self) -> dict:\n    '''Names.\n\n    Multi-line doc.\n    '''\n"
        "    import json  # stays inside\n    return {'success': True, 'data': sorted(self.items)}", "names")
    out = assemble_class(BASE, "Shop", [method])
    tree = ast.parse(out)
    assert ast.get_docstring(tree) == "Module doc."
    assert out.count("import re") == 1 and "from typing import Dict, List" in out
    assert "        import json  # stays inside" in out  # a method's own import is not hoisted
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert [f.name for f in cls.body if isinstance(f, ast.FunctionDef)] == ["__init__", "count", "names"]
    assert "def unrelated" in out and "# items by id" in out  # comments survive (no ast.unparse round trip)


def test_assemble_replaces_same_name_method_and_keeps_first_helper():
    first = parse_method_snippet("def get(self) -> dict:\n    return self._h()\n"
                                 "def _h(self):\n    return {'success': True, 'data': 1}", "get")
    out = assemble_class(BASE, "Shop", [first])
    fixed = parse_method_snippet("def get(self) -> dict:\n    return {'success': True, 'data': 2}", "get")
    out2 = assemble_class(out, "Shop", [fixed])
    assert "'data': 2" in method_source(out2, "Shop", "get")
    assert "_h" in out2 and out2.count("def get") == 1
    last = parse_method_snippet("def count(self) -> dict:\n    return {'success': True, 'data': 0}", "count")
    out3 = assemble_class(BASE, "Shop", [last, parse_method_snippet("def z(self) -> dict:\n    return {}", "z")])
    assert "'data': 0" in method_source(out3, "Shop", "count") and "def z" in out3


def test_contract_problems():
    method = parse_method_snippet(
        "def f(self, a, b: int) -> dict:\n    if b:\n        raise ValueError('x')\n    if a:\n        return\n"
        "    return {'ok': 1}", "f")
    problems = "\n".join(contract_problems(method))
    for needle in ("`a` of `f` needs a type annotation", "docstring", "never raise", "returns nothing",
                   '"success" key'):
        assert needle in problems


def test_accept_skeleton_and_methods_from_fixtures():
    cls = fixture_class("library")
    state = accept_skeleton(cls.source, cls.class_name)
    assert [a.name for a in state] == ["books", "members", "loans"]
    with pytest.raises(AnswerFormatError, match="only __init__"):
        accept_skeleton(BASE, "Shop")
    with pytest.raises(AnswerFormatError, match="config"):
        accept_skeleton("from typing import Dict\n\nclass A:\n    def __init__(self, init_config: dict = None):\n"
                        "        self.init_config = init_config\n        self.items: Dict[str, int] = {}\n", "A")
    code = parse_method((ANSWERS / "library/method_checkout_book.md").read_text()).code
    method, assembled, spec = accept_method(code, "checkout_book", cls.source, cls.class_name, kind="state_change")
    assert spec.kind == "state_change" and "_next_loan_id" in method.helpers
    assert spec.input_schema["properties"]["book_id"]["description"]
    with pytest.raises(AnswerFormatError, match="type annotation"):
        accept_method(parse_method((ANSWERS / "library/method_checkout_book.0.md").read_text()).code, "checkout_book",
                      cls.source, cls.class_name)
    with pytest.raises(AnswerFormatError, match="modifies the state"):
        accept_method(code, "checkout_book", cls.source, cls.class_name, kind="query")
    other = "def checkout_book(self) -> dict:\n    '''X.'''\n    return self._next_loan_id()\n" \
            "def _next_loan_id(self):\n    return {'success': True}"
    with pytest.raises(AnswerFormatError, match="already has a helper"):
        accept_method(other, "checkout_book", assembled, cls.class_name)


def test_forbidden_import_is_refused_with_the_static_check_message():
    cls = fixture_class("parking")
    code = parse_method((ANSWERS / "parking/method_renew_permit.md").read_text()).code
    with pytest.raises(AnswerFormatError, match="os"):
        accept_method(code, "renew_permit", cls.source, cls.class_name)
