"""Accept or refuse generated code: the project's static checks plus the method contract, as model feedback.

Every function raises AnswerFormatError with the problems listed, so `ask()` can send them back.
"""

from __future__ import annotations

import ast

from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.skeleton.checks import check_determinism, check_source
from envscaler_mcp.skeleton.models import StateAttribute, ToolSpec
from envscaler_mcp.skeleton.schema import extract_state, extract_tools
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.skel.assemble import MethodCode, assemble_class, method_source, parse_method_snippet


def _fail(problems: list[str], what: str) -> None:
    if problems:
        shown = problems[:8]
        more = f"\n  (+{len(problems) - 8} more)" if len(problems) > 8 else ""
        raise AnswerFormatError(f"{what} failed the checks:\n  - " + "\n  - ".join(shown) + more)


def static_problems(source: str, class_name: str) -> list[str]:
    """The static-check and determinism problems of a whole module."""
    return check_source(source, class_name) + check_determinism(source)


def accept_skeleton(source: str, class_name: str) -> list[StateAttribute]:
    """A class skeleton must pass the static checks, have only __init__, and declare at least one state
    attribute. Returns its state attributes."""
    _fail(static_problems(source, class_name), "the class definition")
    try:
        state = extract_state(source, class_name)
        tools = extract_tools(source, class_name)
    except EnvironmentCodeError as exc:
        raise AnswerFormatError(str(exc)) from exc
    if tools:
        raise AnswerFormatError(
            "the class must contain only __init__ at this step; remove the methods " + ", ".join(t.name for t in tools)
        )
    if any(a.name in ("init_config", "config") for a in state):
        raise AnswerFormatError("do not store the constructor's config as an attribute: a state is loaded by "
                                "setting each attribute directly; create only the typed containers in __init__")
    if not state:
        raise AnswerFormatError("__init__ declares no public state attribute; add typed containers such as "
                                "`self.orders: Dict[str, OrderInfo] = {}`")
    return state


def contract_problems(method: MethodCode) -> list[str]:
    """Problems with the method contract: annotations, docstring, returns, no raise."""
    func = ast.parse(method.source).body[0]
    assert isinstance(func, ast.FunctionDef)
    problems = []
    params = [a for a in func.args.args[1:] + func.args.kwonlyargs]
    if func.args.vararg or func.args.kwarg:
        problems.append(f"`{func.name}` must not take *args or **kwargs; list every parameter explicitly")
    for arg in params:
        if arg.annotation is None:
            problems.append(f"parameter `{arg.arg}` of `{func.name}` needs a type annotation")
    doc = ast.get_docstring(func) or ""
    if not doc.strip():
        problems.append(f"`{func.name}` needs a Google-style docstring (summary, Args, Returns)")
    elif params and "Args:" not in doc:
        problems.append(f"the docstring of `{func.name}` needs an `Args:` section with one line per parameter")
    for node in ast.walk(func):
        if isinstance(node, ast.Raise):
            problems.append(f"line {node.lineno}: `{func.name}` must never raise; return "
                            '{"success": False, "error": "..."} instead')
        elif isinstance(node, ast.Return):
            value = node.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                problems.append(f"line {node.lineno}: `{func.name}` returns nothing; return a result dict")
            elif isinstance(value, ast.Dict):
                keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
                if "success" not in keys and None not in value.keys:
                    problems.append(f'line {node.lineno}: the returned dict needs a "success" key')
    return problems


def accept_method(
    code: str, name: str, base_source: str, class_name: str, *, kind: str | None = None
) -> tuple[MethodCode, str, ToolSpec]:
    """Parse a method answer, splice it into `base_source`, and check the result.

    `base_source` must already be clean; any problem found is therefore this method's. With `kind` =
    'query', a method that writes state is refused. Returns (method, assembled source, its tool spec).
    """
    method = parse_method_snippet(code, name)
    _fail(contract_problems(method), f"method `{name}`")
    for helper, src in method.helpers.items():
        try:
            existing = method_source(base_source, class_name, helper)
        except KeyError:
            continue
        if existing.strip() != src.strip():
            raise AnswerFormatError(
                f"the class already has a helper `{helper}` with different code; reuse it unchanged or give "
                "your helper another name"
            )
    assembled = assemble_class(base_source, class_name, [method])
    _fail(static_problems(assembled, class_name), f"the class with method `{name}`")
    try:
        tools = extract_tools(assembled, class_name)
    except EnvironmentCodeError as exc:
        raise AnswerFormatError(str(exc)) from exc
    spec = next((t for t in tools if t.name == name), None)
    if spec is None:
        raise AnswerFormatError(f"`{name}` is not exposed as a tool; make it a plain public instance method")
    props = spec.parameters()
    undocumented = [p for p, schema in props.items() if not schema.get("description")]
    if undocumented:
        raise AnswerFormatError(f"the docstring's Args section of `{name}` does not describe: "
                                + ", ".join(undocumented))
    if kind == "query" and spec.kind == "state_change":
        raise AnswerFormatError(f"`{name}` is a query operation but it modifies the state; it must only read")
    return method, assembled, spec
