"""The checklist on the untouched initial state with an empty transcript (the guards: no episode's data) runs
first in the batch process of a trial sent in the same request, instead of a fork of its own; trials still
never share one, and nothing of a trial reaches the guards' checks."""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT
from tests.sandbox.test_trials import INITIAL, _busy, _final, _Requests, _until, _waiting

pytestmark = pytest.mark.anyio

# With the real `os` handed to validators (as an escape would), a check counts the checks its process has run
# and says whether it was the first, and whether it saw a trial's data in an earlier check of its process.
COUNTER = ChecklistItem(id="first", description="first in its process", validator=(
    "def check_func(s):\n    seen = int(os.environ.get('CHECKS_SEEN', '0')) + 1\n"
    "    os.environ['CHECKS_SEEN'] = str(seen)\n    return seen == 1\n"))
TAINT = ChecklistItem(id="untainted", description="no trial's state seen before in this process", validator=(
    "def check_func(s):\n    tainted = os.environ.get('SAW_TRIAL') == '1'\n"
    "    if s['orders']['O1']['status'] != 'pending':\n        os.environ['SAW_TRIAL'] = '1'\n"
    "    return not tainted\n"))
SAID = ChecklistItem(id="said", description="said the total", kind="transcript",
                     validator="def check_func(t):\n    return '$10' in t['answer']\n")


async def _together(sb: ValidatorSandbox, runs: dict[str, tuple[Any, Any, Any]],
                    items: list[ChecklistItem]) -> dict[str, list[bool]]:
    """Each run (initial, final, transcript) in the order given, all waiting for the one worker together."""
    got: dict[str, list[bool]] = {}

    async def one(name: str) -> None:
        initial, final, transcript = runs[name]
        got[name] = [r.passed for r in await sb.run(items, initial, final, transcript)]

    async with anyio.create_task_group() as tg:
        async with _busy(sb):
            for n, name in enumerate(runs):
                tg.start_soon(one, name)
                await _until(lambda n=n: _waiting(sb) == n + 1)
    return got


def _guards() -> tuple[Any, Any, Any]:
    initial = copy.deepcopy(INITIAL)
    return initial, initial, dict(EMPTY_TRANSCRIPT)


async def test_the_guards_run_first_in_a_trials_batch_process(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _Requests(monkeypatch)
    items = [COUNTER, TAINT, SAID]
    trial = (copy.deepcopy(INITIAL), _final("shipped"), {"calls": [], "answer": "$10", "told_user": []})
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        got = await _together(sb, {"trial": trial, "guards": _guards()}, items)
        alone = await _together(sb, {"guards": _guards()}, items)
    assert requests.episodes == [2, 1]
    # the guards ran first in the process (the counter at 1, no trial's state seen); the trial's checks after
    # them in the same process (the counter past 1): one fork for both
    assert got == {"guards": [True, True, False], "trial": [False, True, True]}
    assert alone == {"guards": [True, True, False]}  # alone, the guards get a process of their own


async def test_trials_never_share_a_process_with_each_other_beside_the_guards(
        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _Requests(monkeypatch)
    runs = {"a": (copy.deepcopy(INITIAL), _final("shipped"), None), "guards": (*_guards()[:2], None),
            "b": (copy.deepcopy(INITIAL), _final("cancelled"), None)}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        got = await _together(sb, runs, [COUNTER, TAINT])
    assert requests.episodes == [3]
    # the guards joined trial a's process (first in it); trial b started a process of its own from zero
    assert got == {"guards": [True, True], "a": [False, True], "b": [True, True]}


async def test_a_run_on_the_initial_state_with_an_episodes_transcript_is_a_trial(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An episode whose agent changed nothing but said something carries its own data (the transcript): it is
    checked in a process of its own, like any trial."""
    requests = _Requests(monkeypatch)
    initial = copy.deepcopy(INITIAL)
    runs = {"trial": (copy.deepcopy(INITIAL), _final("shipped"), dict(EMPTY_TRANSCRIPT)),
            "idle": (initial, initial, {"calls": [], "answer": "$10", "told_user": []})}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        got = await _together(sb, runs, [COUNTER, SAID])
    assert requests.episodes == [2]
    assert got == {"trial": [True, False], "idle": [True, True]}


async def test_guards_that_crash_their_process_leave_the_trials_verdicts_as_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A guard check that crashes the shared process (the real `ctypes`, as an escape would) fails with the
    reason; the trial's checks still run, in a fresh process, and get their own verdicts."""
    _Requests(monkeypatch)
    crash = ChecklistItem(id="crash", description="crashes on the initial state", validator=(
        "def check_func(s):\n    if s['orders']['O1']['status'] == 'pending':\n        ctypes.string_at(0)\n"
        "    return s['orders']['O1']['status'] == 'shipped'\n"))
    status = ChecklistItem(id="status", description="shipped",
                           validator="def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped'\n")
    runs = {"trial": (copy.deepcopy(INITIAL), _final("shipped"), None), "guards": (*_guards()[:2], None)}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        results: dict[str, list[tuple[bool, str | None]]] = {}

        async def one(name: str) -> None:
            initial, final, transcript = runs[name]
            results[name] = [(r.passed, r.reason) for r in await sb.run([crash, status], initial, final, transcript)]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, name in enumerate(runs):
                    tg.start_soon(one, name)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
        faults = list(sb.faults)
    assert results == {"guards": [(False, "the validator crashed the interpreter (SIGSEGV)"), (False, None)],
                       "trial": [(True, None), (True, None)]}
    assert faults == []
