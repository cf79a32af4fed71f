"""Known-broken tools made from the bundled environments' good ones, for measuring what the environment check's
tool coverage catches (benchmarks/gate_defects.py --tools, tests/qa/test_seeded_tool_defects.py).

Two kinds, each a one-place mutation of one method:

* broken tool: the method calls a helper the class does not have just before its first successful return
  (as the synthesized `schedule_appointment` did with `generate_appointment_id`): it raises on its success path;
* unreachable lookup: the method looks its record up in another collection (`self.orders` read as
  `self.customers`), or compares a record's field with a parameter through another field of the record.

Each maker returns the mutated skeleton, or None when the tool offers no such place.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from envscaler_mcp.catalog.store import get_skeleton, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.servers import Transport
from envscaler_mcp.skeleton.models import EnvSkeleton, ToolProof
from envscaler_mcp.synth.skel.coverage import prove_tools, reference_calls
from envscaler_mcp.synth.skel.probes import collections


def _method(skeleton: EnvSkeleton, tool: str) -> ast.FunctionDef | None:
    for node in ast.walk(ast.parse(skeleton.class_source)):
        if isinstance(node, ast.ClassDef) and node.name == skeleton.class_name:
            return next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == tool), None)
    return None


def _with_lines(skeleton: EnvSkeleton, lines: list[str]) -> EnvSkeleton:
    return skeleton.model_copy(update={"class_source": "\n".join(lines) + "\n"})


def _succeeds(node: ast.AST) -> bool:
    return isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and any(
        isinstance(k, ast.Constant) and k.value == "success" and isinstance(v, ast.Constant) and v.value is True
        for k, v in zip(node.value.keys, node.value.values, strict=True))


def _refuses(node: ast.AST) -> bool:
    return isinstance(node, ast.Return) and isinstance(node.value, ast.Dict) and any(
        isinstance(k, ast.Constant) and k.value == "success" and isinstance(v, ast.Constant) and v.value is False
        for k, v in zip(node.value.keys, node.value.values, strict=True))


def raises_on_success(skeleton: EnvSkeleton, tool: str) -> EnvSkeleton | None:
    """A call of a missing helper just before the method's first `return {"success": True, ...}`."""
    method = _method(skeleton, tool)
    if method is None:
        return None
    returns = sorted((n for n in ast.walk(method) if _succeeds(n)), key=lambda n: n.lineno)
    if not returns:
        return None
    lines = skeleton.class_source.splitlines()
    at = returns[0].lineno - 1
    indent = re.match(r"\s*", lines[at]).group(0)  # type: ignore[union-attr]
    return _with_lines(skeleton, [*lines[:at], f"{indent}self._generate_record_id()", *lines[at:]])


def looks_in_another_collection(skeleton: EnvSkeleton, tool: str) -> EnvSkeleton | None:
    """The method's first lookup of a parameter in `self.<collection>` (`x in self.c`, `self.c.get(x)`,
    `self.c[x]`) made in another collection whose keys it shares none of."""
    method = _method(skeleton, tool)
    keyed = collections(skeleton.default_state)
    if method is None or len(keyed) < 2:
        return None
    params = {a.arg for a in method.args.args}
    gates = {id(n.test) for n in ast.walk(method) if isinstance(n, ast.If) and any(_refuses(b) for b in n.body)}
    for node in sorted(ast.walk(method), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        if isinstance(node, ast.Compare) and id(node) not in gates:
            continue  # a membership test that refuses nothing decides something else (which field to stamp)
        target = _looked_up(node, params)
        if target is None or target not in keyed:
            continue
        other = next((c for c in keyed if c != target and not set(keyed[c]) & set(keyed[target])), None)
        if other is None:
            return None
        lines = skeleton.class_source.splitlines()
        line = lines[node.lineno - 1]
        changed = re.sub(rf"self\.{target}\b", f"self.{other}", line, count=1)
        return _with_lines(skeleton, [*lines[:node.lineno - 1], changed, *lines[node.lineno:]])
    return None


def _looked_up(node: ast.AST, params: set[str]) -> str | None:
    """The collection `node` looks a parameter up in, if it does."""
    def coll(expr: ast.AST) -> str | None:
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return expr.attr
        return None

    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in params \
            and isinstance(node.ops[0], ast.NotIn):
        return coll(node.comparators[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in params:
        return coll(node.func.value)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id in params:
        return coll(node.value)
    return None


def compares_the_wrong_field(skeleton: EnvSkeleton, tool: str) -> EnvSkeleton | None:
    """The method's first `<record>["field"] == <parameter>` reads another string field of the record."""
    method = _method(skeleton, tool)
    if method is None:
        return None
    params = {a.arg for a in method.args.args}
    fields = {f: r[f] for records in collections(skeleton.default_state).values() for r in records.values()
              for f in r}
    for node in sorted(ast.walk(method), key=lambda n: getattr(n, "lineno", 0)):
        if not (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq)):
            continue
        sides = [node.left, node.comparators[0]]
        if not any(isinstance(s, ast.Name) and s.id in params for s in sides):
            continue
        for side in sides:
            if isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Constant) \
                    and isinstance(side.slice.value, str) and side.slice.value in fields:
                field = side.slice.value
                sibling = next((f for f in ("name", "email", "status", "title") if f != field and f in fields
                                and isinstance(fields[f], str)), None)
                if sibling is None:
                    return None
                lines = skeleton.class_source.splitlines()
                line = lines[node.lineno - 1]
                changed = line.replace(f'["{field}"]', f'["{sibling}"]', 1).replace(f"['{field}']", f"['{sibling}']", 1)
                return _with_lines(skeleton, [*lines[:node.lineno - 1], changed, *lines[node.lineno:]])
    return None


def unreachable_lookup(skeleton: EnvSkeleton, tool: str) -> EnvSkeleton | None:
    """Another collection where the method has a lookup, else the wrong field where it compares one."""
    return looks_in_another_collection(skeleton, tool) or compares_the_wrong_field(skeleton, tool)


TOOL_KINDS: dict[str, Callable[[EnvSkeleton, str], EnvSkeleton | None]] = {
    "broken tool": raises_on_success,
    "unreachable lookup": unreachable_lookup,
}


async def prove(skeleton: EnvSkeleton, env: str, tools: list[str] | None = None,
                transport: Transport = "pipe") -> dict[str, ToolProof]:
    """The environment check's tool coverage on a catalog environment's code: probes from its default state,
    its scenarios' reference solutions as known calls and their initial states as further states."""
    scenarios = scenarios_for(env)
    async with launch_server(skeleton, transport=transport) as server:
        proofs = await prove_tools(skeleton, skeleton.default_state, server.episode, known=reference_calls(scenarios),
                                   states=[s.initial_state for s in scenarios], tools=tools)
    return {p.tool: p for p in proofs}


def seeded_tools(per_kind: int, envs: list[str]) -> list[tuple[str, str, str, EnvSkeleton]]:
    """(kind, env, tool, mutated skeleton): up to `per_kind` of each kind, spread over the environments and
    their tools (every fifth tool in turn)."""
    found: list[tuple[str, str, str, EnvSkeleton]] = []
    skeletons = {env: get_skeleton(env) for env in envs}
    for kind, make in TOOL_KINDS.items():
        made = 0
        for round_ in range(40):
            for env, skeleton in skeletons.items():
                names = [t.name for t in skeleton.tools]
                tool = names[(round_ * 5 + len(env)) % len(names)]
                if made >= per_kind or any(f[:3] == (kind, env, tool) for f in found):
                    continue
                mutant = make(skeleton, tool)
                if mutant is not None:
                    found.append((kind, env, tool, mutant))
                    made += 1
    return found
