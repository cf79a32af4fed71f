"""Checks that read only skip the comparison of their states; every way a check can change a state keeps it.

sandbox/readonly.py decides from the source; a check it wrongly judged read-only would hand the next check a
changed state. The sandbox runs below prove by effect that each mutation is undone for the check after it."""

from __future__ import annotations

import ast
import copy
import json
import os
from typing import Any

import pytest

from envscaler_mcp.sandbox.readonly import reads_only
from envscaler_mcp.sandbox.runner import Pristine, Runner
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

INITIAL = {"orders": {"O1": {"status": "pending", "total": 10}}, "today": "2025-01-01", "log": [1, 2]}
FINAL = {"orders": {"O1": {"status": "shipped", "total": 10}}, "today": "2025-01-01", "log": [1, 2, 3]}

# Each changes `t` (the final state, then the initial state) in place, in one of the ways a check can.
MUTATIONS = [
    "t['today'] = 'x'",
    "del t['today']",
    "t['log'][0:1] = []",
    "x = t['log']\n        x += [9]",
    "x = t['orders']\n        x |= {'O9': 1}",
    "t['log'].append(9)",
    "t['log'].sort(reverse=True)",
    "t['orders'].pop('O1')",
    "t.update(today='x')",
    "dict.update(t, today='x')",
    "t.setdefault('new', 1)",
    "operator.setitem(t, 'today', 'x')",
    "operator.methodcaller('clear')(t)",
    "operator.iadd(t['log'], [9])",
    "collections.Counter.subtract(t['orders']['O1'], {'total': 10})",
    "put(t, 'today', 'x')",
]
IMPORTS = {"operator.": "import operator\n", "collections.": "import collections\n",
           "put(": "from operator import setitem as put\n"}


def mutating(change: str) -> str:
    """A check making `change` to both states; it imports only what the change uses."""
    header = "".join(line for used, line in IMPORTS.items() if used in change)
    return header + f"def check_func(s):\n    for t in (s, initial_state):\n        {change}\n    return True\n"


READING = [
    "def check_func(s):\n    return sorted(s['orders'])[0] == 'O1' and len(initial_state['log']) > 1\n",
    "import json\ndef check_func(s):\n    n = 0\n    for o in s['orders'].values():\n        n = n + o['total']\n"
    "    return json.dumps(s).count('O1') == 1 and n == 10\n",
    "def check_func(s):\n    def total(d):\n        return sum(o.get('total', 0) for o in d['orders'].values())\n"
    "    match s:\n        case {'today': str(day)}:\n            return total(s) == 10 and day < '2026'\n"
    "    return False\n",
]


@pytest.mark.parametrize("change", MUTATIONS)
def test_every_way_to_change_a_state_is_seen(change: str) -> None:
    assert not reads_only(ast.parse(mutating(change)))


@pytest.mark.parametrize("source", READING)
def test_checks_that_only_read_are_seen_as_such(source: str) -> None:
    assert reads_only(ast.parse(source))


def test_a_transcript_helper_or_a_name_fetched_at_run_time_counts_as_a_change() -> None:
    for source in ("def check_func(t):\n    return transcript_checks.called(t, 'x')\n",
                   "import transcript_checks as tc\ndef check_func(t):\n    return tc.called(t, 'x')\n",
                   "from transcript_checks import says\ndef check_func(t):\n    return says(t, 3)\n",
                   "def check_func(s):\n    return getattr(s, 'get')('today') is not None\n",
                   "from operator import *\ndef check_func(s):\n    return True\n"):
        assert not reads_only(ast.parse(source))


@pytest.mark.anyio
async def test_each_change_is_undone_for_the_next_check() -> None:
    """By effect: every mutation, as the first check of its batch, then a check that needs both states intact."""
    intact = ChecklistItem(id="intact", description="", validator=(
        f"def check_func(s):\n    return s == {FINAL!r} and initial_state == {INITIAL!r}\n"))
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
        for change in MUTATIONS:
            item = ChecklistItem(id="change", description="", validator=mutating(change))
            results = await sb.run([item, intact], copy.deepcopy(INITIAL), copy.deepcopy(FINAL))
            assert [(r.passed, r.reason) for r in results] == [(True, None), (True, None)], change


def _in_a_fork(body: Any) -> Any:
    """body()'s JSON-able result, computed in a forked child (a Runner sets the CPU alarm and limit of the
    process it runs checks in)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, json.dumps(body()).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out = f.read()
    os.waitpid(pid, 0)
    return json.loads(out)


def test_reading_checks_are_not_compared_until_a_check_that_may_change_has_run() -> None:
    def body() -> list[Any]:
        settled: list[str] = []
        runner = Runner()
        runner.arm()
        initial = Pristine(json.dumps(INITIAL).encode()).parse(pristine_copy=True)
        final = Pristine(json.dumps(FINAL).encode()).parse()
        names = {id(initial): "initial", id(final): "final"}
        real = Pristine.settle
        Pristine.settle = lambda self: (settled.append(names[id(self)]), real(self))[1]  # type: ignore[method-assign]

        def run(source: str) -> bool:
            return runner.run_check(runner.prepare(source), initial, final, 5.0, (True, True))["passed"] is True

        seen = [[run(source) for source in READING], list(settled), final.imaged]
        seen += [run(mutating("t['log'].append(9)")), list(settled), run(READING[0]), list(settled)]
        return seen

    reading, before, imaged, changed, after_change, read_again, after_read = _in_a_fork(body)
    assert reading == [True] * len(READING) and changed and read_again
    assert before == [] and imaged is False  # nothing compared, no image made
    assert after_change == ["final", "initial"]
    assert after_read == ["final", "initial"] * 2  # compared now: code of the changing check may still run
