"""The validator sandbox contains whatever a validator does and records it as a failed check with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.errors import ValidatorError
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio

INITIAL = {"orders": {"O1": {"status": "pending", "total": 10}}, "today": "2025-01-01"}
FINAL = {"orders": {"O1": {"status": "shipped", "total": 10}}, "today": "2025-01-01"}


def item(source: str | None, item_id: str = "c1") -> ChecklistItem:
    return ChecklistItem(id=item_id, description=f"item {item_id}", validator=source)


async def run_one(source: str | None, **opts: float) -> tuple[bool, str | None]:
    async with ValidatorSandbox(timeout_s=opts.get("timeout_s", 1.0), memory_mb=256) as sb:
        [result] = await sb.run([item(source)], INITIAL, FINAL)
    return result.passed, result.reason


async def test_true_and_false_results_with_initial_state_global() -> None:
    passed, reason = await run_one(
        "def check_func(final_state):\n"
        "    return initial_state['orders']['O1']['status'] == 'pending' and "
        "final_state['orders']['O1']['status'] == 'shipped'\n"
    )
    assert (passed, reason) == (True, None)
    assert await run_one("def check_func(final_state):\n    return False\n") == (False, None)


async def test_allowed_imports_work() -> None:
    src = (
        "import json, re, math, collections.abc\nfrom datetime import date\nfrom collections import Counter\n"
        "def check_func(s):\n"
        "    c = Counter(o['status'] for o in s['orders'].values())\n"
        "    return (c['shipped'] == 1 and isinstance(s, collections.abc.Mapping)\n"
        "            and date.fromisoformat(s['today']).year == 2025 and re.match('ship', 'shipped') is not None)\n"
    )
    assert await run_one(src) == (True, None)


async def test_exception_is_recorded() -> None:
    assert await run_one("def check_func(s):\n    return 1 / 0\n") == (
        False, "raised ZeroDivisionError: division by zero")


async def test_non_bool_return_fails() -> None:
    assert await run_one("def check_func(s):\n    return 'yes'\n") == (False, "returned 'yes' (str), not a bool")
    passed, reason = await run_one("def check_func(s):\n    return 1\n")
    assert not passed and reason == "returned 1 (int), not a bool"


async def test_syntax_error_and_missing_check_func() -> None:
    passed, reason = await run_one("def check_func(s:\n    return True\n")
    assert not passed and reason is not None and reason.startswith("syntax error")
    passed, reason = await run_one("def other(s):\n    return True\n")
    assert not passed and reason == "the validator does not define check_func(final_state)"


async def test_python_infinite_loop_times_out() -> None:
    passed, reason = await run_one("def check_func(s):\n    while True:\n        pass\n", timeout_s=0.3)
    assert (passed, reason) == (False, "timed out after 0.3 s")


async def test_loop_in_c_code_is_killed_by_the_watchdog_and_the_rest_runs_in_a_new_batch_process() -> None:
    async with ValidatorSandbox(timeout_s=0.3, memory_mb=256, grace_s=0.3) as sb:
        results = await sb.run(
            [item("def check_func(s):\n    return sum(range(10**14)) > 0\n", "c1"),
             item("def check_func(s):\n    return s['orders']['O1']['total'] == 10\n", "c2")],
            INITIAL, FINAL,
        )
        assert sb.restarts == 0 and sb.faults == []  # the validator's own doing: no worker fault
    assert not results[0].passed and results[0].reason is not None
    assert results[0].reason.startswith("timed out after 0.3 s")
    assert results[1].passed and results[1].reason is None


async def test_huge_allocations_hit_the_memory_limit() -> None:
    assert await run_one("def check_func(s):\n    x = 'a' * (10**10)\n    return True\n") == (
        False, "memory limit exceeded")
    grow = "def check_func(s):\n    b = bytearray()\n    while True:\n        b += b'x' * 10**6\n"
    assert await run_one(grow, timeout_s=5.0) == (False, "memory limit exceeded")


@pytest.mark.parametrize("module", ["os", "socket", "subprocess", "sys", "importlib"])
async def test_imports_outside_the_whitelist_are_refused(module: str) -> None:
    assert await run_one(f"import {module}\ndef check_func(s):\n    return True\n") == (
        False, f"import of '{module}' is not allowed")


async def test_whitelisted_modules_do_not_leak_their_imports() -> None:
    passed, reason = await run_one("import typing\ndef check_func(s):\n    return typing.sys is not None\n")
    assert not passed and reason is not None and "has no attribute 'sys'" in reason


async def test_dunder_escape_is_refused() -> None:
    src = "def check_func(s):\n    return len(().__class__.__base__.__subclasses__()) > 0\n"
    passed, reason = await run_one(src)
    assert not passed and reason is not None and reason.startswith("access to attribute '__")
    src = "def check_func(s):\n    match ():\n        case object(__class__=c):\n            return c is tuple\n"
    assert await run_one(src) == (False, "access to attribute '__class__' is not allowed")
    src = "def check_func(s):\n    return getattr((), '__class__') is tuple\n"
    assert await run_one(src) == (False, "access to attribute '__class__' is not allowed")


async def test_files_cannot_be_written(tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    passed, reason = await run_one(
        f"def check_func(s):\n    open({str(target)!r}, 'w').write('x')\n    return True\n")
    assert (passed, reason) == (False, "open() is not allowed in validators")
    assert not target.exists()


async def test_a_mutating_check_does_not_affect_the_next_one() -> None:
    mutate = ("def check_func(s):\n    s['orders'].clear()\n    initial_state['orders'].clear()\n"
              "    return True\n")
    read = ("def check_func(s):\n    return 'O1' in s['orders'] and 'O1' in initial_state['orders']\n")
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256) as sb:
        results = await sb.run([item(mutate, "c1"), item(read, "c2")], INITIAL, FINAL)
        again = await sb.run([item(read, "c3")], INITIAL, FINAL)  # same states again: served from the cache
    assert [r.passed for r in results + again] == [True, True, True]
    assert FINAL["orders"] and INITIAL["orders"]  # the caller's objects are untouched too


async def test_the_initial_state_as_the_final_one_is_a_state_of_its_own_for_every_check() -> None:
    """The guards' episode (the checklist on the untouched initial state): its final state shares the initial
    state's parse, yet each check gets two objects of its own, whatever the checks before it changed in either;
    a check that does not name `initial_state` between them changes nothing of that."""
    distinct = "def check_func(s):\n    return s is not initial_state and s == initial_state\n"
    mutate = ("def check_func(s):\n    s['orders'].clear()\n    initial_state['orders']['O1']['status'] = 'x'\n"
              "    return True\n")
    plain = "def check_func(s):\n    s['today'] = 'changed'\n    return 'O1' in s['orders']\n"
    read = "def check_func(s):\n    return s == initial_state == INITIAL\n".replace("INITIAL", repr(INITIAL))
    items = [item(distinct, "c1"), item(mutate, "c2"), item(plain, "c3"), item(read, "c4"), item(mutate, "c5"),
             item(read, "c6")]
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
        results = await sb.run(items, INITIAL, INITIAL)
        final = await sb.run(items, INITIAL, FINAL)  # and the same checklist on another final state
    assert [(r.passed, r.reason) for r in results] == [(True, None)] * 6
    assert [r.passed for r in final] == [False, True, True, False, True, False]
    assert INITIAL["orders"]["O1"]["status"] == "pending"


async def test_missing_validator_and_order_across_workers() -> None:
    src = "def check_func(s):\n    return {n} % 2 == 0\n"
    items = [item(src.format(n=n), f"c{n}") for n in range(20)] + [item(None, "none")]
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256, workers=2) as sb:
        results = await sb.run(items, INITIAL, FINAL)
        assert await sb.run([], INITIAL, FINAL) == []
    assert [r.item_id for r in results] == [f"c{n}" for n in range(20)] + ["none"]
    assert [r.passed for r in results[:20]] == [n % 2 == 0 for n in range(20)]
    assert results[-1].reason == "the checklist item has no validator"


async def test_non_json_state_and_use_outside_context_are_clear_errors() -> None:
    sb = ValidatorSandbox()
    with pytest.raises(ValidatorError, match="outside"):
        await sb.run([item("def check_func(s):\n    return True\n")], {}, {})
    async with ValidatorSandbox(memory_mb=256) as sb:
        with pytest.raises(ValidatorError, match="JSON"):
            await sb.run([item("def check_func(s):\n    return True\n")], {}, {"x": {1, 2}})


async def test_a_cancelled_run_leaves_the_sandbox_usable() -> None:
    import anyio

    slow = "def check_func(s):\n    x = 0\n    for i in range(10**8):\n        x += i\n    return True\n"
    async with ValidatorSandbox(timeout_s=10.0, memory_mb=256) as sb:
        with anyio.move_on_after(0.3):
            await sb.run([item(slow, "slow")], INITIAL, FINAL)
        results = await sb.run([item("def check_func(s):\n    return True\n", "next")], INITIAL, FINAL)
    assert [(r.item_id, r.passed, r.reason) for r in results] == [("next", True, None)]


TRANSCRIPT = {"calls": [{"name": "get_order", "arguments": {"order_id": "O1"}, "result": {"success": True},
                         "is_error": False}],
              "answer": "Order O1 has shipped; the total was $10.00.", "told_user": []}


def transcript_item(source: str, item_id: str = "t1") -> ChecklistItem:
    return ChecklistItem(id=item_id, description=f"item {item_id}", validator=source, kind="transcript")


async def test_transcript_items_read_the_transcript_beside_state_items_with_evidence() -> None:
    helper = ("from transcript_checks import says, called\n"
              "def check_func(transcript):\n"
              "    return says(transcript, 10, 'O1') and called(transcript, 'get_order', order_id='o1')\n")
    plain = ("def check_func(transcript):\n"
             "    return transcript['calls'][0]['name'] == 'get_order' and initial_state['today'] == '2025-01-01'\n")
    state = "def check_func(final_state):\n    return final_state['orders']['O1']['status'] == 'shipped'\n"
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256) as sb:
        results = await sb.run([transcript_item(helper), item(state, "s1"), transcript_item(plain, "t2")],
                               INITIAL, FINAL, TRANSCRIPT)
        without = await sb.run([transcript_item(helper), item(state, "s1")], INITIAL, FINAL)
    assert [(r.item_id, r.passed, r.reason) for r in results] == [("t1", True, None), ("s1", True, None),
                                                                  ("t2", True, None)]
    assert results[0].evidence == [
        "stated '10': \u00abOrder O1 has shipped; the total was $10.00.\u00bb",
        "stated 'O1': \u00abOrder O1 has shipped; the total was $10.00.\u00bb",
        'call 1 get_order({"order_id": "O1"}) ok',
    ]
    assert results[1].evidence == []
    assert [(r.passed, r.reason) for r in without] == [
        (False, "a transcript check needs a transcript, and none was given"), (True, None)]


async def test_transcript_checks_have_the_same_limits(tmp_path: Path) -> None:
    target = tmp_path / "written.txt"
    sources = [
        f"def check_func(t):\n    open({str(target)!r}, 'w').write('x')\n    return True\n",
        "import os\ndef check_func(t):\n    return True\n",
        "import transcript_checks\ndef check_func(t):\n    transcript_checks._EVIDENCE.append('forged')\n"
        "    return True\n",
        "def check_func(t):\n    while True:\n        pass\n",
        "def check_func(t):\n    t['answer'] = 'changed'\n    t['calls'].clear()\n    return True\n",
        "def check_func(t):\n    return t['answer'].startswith('Order') and len(t['calls']) == 1\n",
    ]
    async with ValidatorSandbox(timeout_s=0.5, memory_mb=256) as sb:
        results = await sb.run([transcript_item(s, f"t{n}") for n, s in enumerate(sources)], INITIAL, FINAL,
                               TRANSCRIPT)
    assert [(r.passed, r.reason) for r in results] == [
        (False, "open() is not allowed in validators"),
        (False, "import of 'os' is not allowed"),
        (False, "access to attribute '_EVIDENCE' is not allowed"),
        (False, "timed out after 0.5 s"),
        (True, None),
        (True, None),  # the previous check changed its own copy only
    ]
    assert not target.exists()
    assert TRANSCRIPT["answer"].startswith("Order") and TRANSCRIPT["calls"]


async def test_the_initial_state_handed_as_the_final_one_too_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's initial-false step runs the validators on the initial state as the final state: its JSON is the
    initial state's, not a second encoding of the same object."""
    import envscaler_mcp.sandbox.validators as validators

    encoded: list[object] = []

    def counting(value: object) -> bytes:
        encoded.append(value)
        return real(value)

    real = validators.encode_json
    monkeypatch.setattr(validators, "encode_json", counting)
    state = {"orders": {"O1": {"status": "pending", "total": 10}}}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
        [same] = await sb.run([item("def check_func(s):\n    return s == initial_state\n")], state, state)
        [moved] = await sb.run([item("def check_func(s):\n    return s == initial_state\n")], state, FINAL)
    assert (same.passed, same.reason) == (True, None)
    assert (moved.passed, moved.reason) == (False, None)
    assert not any(value is state for value in encoded) and any(value is FINAL for value in encoded)
