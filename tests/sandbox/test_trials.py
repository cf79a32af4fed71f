"""Trials of one scenario that wait for a worker together are sent in one request, and each is checked in
batch processes of its own (a fresh fork of the pre-imported zygote), on its own final state and transcript:
no trial sees the interpreter state another left, nor can it answer for another. Each trial hands in its own copy of the
initial state, as a run does (it reads every episode's scenario line afresh)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from envscaler_mcp.sandbox import process
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio

INITIAL = {"orders": {"O1": {"status": "pending", "total": 10}}}
CHECKLIST = [
    ChecklistItem(id="mutates", description="clears what it gets", validator=(
        "def check_func(s):\n    s['orders'].clear()\n    initial_state['orders'].clear()\n    return True\n")),
    ChecklistItem(id="status", description="shipped", validator=(
        "def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped' and "
        "initial_state['orders']['O1']['status'] == 'pending'\n")),
    ChecklistItem(id="said", description="said the total", kind="transcript", validator=(
        "def check_func(t):\n    return '$10' in t['answer']\n")),
]


def _final(status: str) -> dict[str, Any]:
    final = copy.deepcopy(INITIAL)
    final["orders"]["O1"]["status"] = status
    return final


def _transcript(answer: str) -> dict[str, Any]:
    return {"calls": [], "answer": answer, "told_user": []}


@asynccontextmanager
async def _busy(sb: ValidatorSandbox) -> AsyncIterator[None]:
    """The only worker is taken (as by another scenario's long checks) until the block ends."""
    worker = await sb._idle_recv.receive()
    try:
        yield
    finally:
        sb._idle_send.send_nowait(worker)


async def _until(condition: Any) -> None:
    """Wait (at most 20 s, a loaded machine included) until `condition()` holds."""
    with anyio.fail_after(20):
        while not condition():
            await anyio.sleep(0.01)


def _waiting(sb: ValidatorSandbox) -> int:
    """How many trials wait for a worker, grouped."""
    return sum(len(group.finals) for group in sb._waiting.values())


class _Requests:
    """Spy on the requests the sandbox sends: how many episodes each carried."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.episodes: list[int] = []
        real = process.Worker.ask

        async def ask(worker: process.Worker, header: dict[str, Any], *args: Any) -> Any:
            self.episodes.append(int(header.get("episodes", 1)))
            return await real(worker, header, *args)

        monkeypatch.setattr(process.Worker, "ask", ask)


async def test_waiting_trials_share_a_batch_and_each_gets_its_own_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _Requests(monkeypatch)
    trials = [(_final("shipped"), _transcript("Shipped; the total was $10.")),
              (_final("pending"), _transcript("Shipped; the total was $10.")),
              (_final("shipped"), _transcript("It is on its way.")),
              (_final("cancelled"), _transcript("Nothing to say."))]
    initials = [copy.deepcopy(INITIAL) for _ in trials]
    got: dict[int, list[tuple[str, bool]]] = {}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        async def trial(k: int) -> None:
            results = await sb.run(CHECKLIST, initials[k], trials[k][0], trials[k][1])
            got[k] = [(r.item_id, r.passed) for r in results]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):  # the trials wait for the worker together
                for k in range(len(trials)):
                    tg.start_soon(trial, k)
                await _until(lambda: _waiting(sb) == len(trials))
    expected = [(True, True), (True, False), (True, True), (True, False)]
    said = [True, True, False, False]
    assert got == {k: [("mutates", True), ("status", expected[k][1]), ("said", said[k])] for k in range(4)}
    assert requests.episodes == [4]  # one request for the four trials
    assert all(i == INITIAL for i in initials) and all(final["orders"] for final, _ in trials)  # none changed


async def test_a_first_trial_cancelled_while_waiting_leaves_the_others_to_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    requests = _Requests(monkeypatch)
    got: dict[int, list[bool]] = {}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        async def trial(k: int, status: str) -> None:
            results = await sb.run(CHECKLIST[:2], copy.deepcopy(INITIAL), _final(status))
            got[k] = [r.passed for r in results]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                first = anyio.CancelScope()
                tg.start_soon(_cancellable, first, trial(0, "shipped"))
                await _until(lambda: _waiting(sb) == 1)
                tg.start_soon(trial, 1, "shipped")
                tg.start_soon(trial, 2, "pending")
                await _until(lambda: _waiting(sb) == 3)
                first.cancel()  # the trial the others joined gives up before the worker is free
                await _until(lambda: _waiting(sb) == 2)
    assert got == {1: [True, True], 2: [True, False]}
    assert requests.episodes == [2]


async def _cancellable(scope: anyio.CancelScope, work: Any) -> None:
    with scope:
        await work


async def test_no_two_trials_share_a_batch_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real `os`/`sys` handed to validators (as an escape would), a check counts the checks its
    process has run: trials of one scenario sent in one request, and another scenario's, all start from zero."""
    requests = _Requests(monkeypatch)
    counter = ("def check_func(s):\n    seen = int(os.environ.get('CHECKS_SEEN', '0')) + 1\n"
               "    os.environ['CHECKS_SEEN'] = str(seen)\n    return seen == 1\n")
    items = [ChecklistItem(id="first", description="first in its process", validator=counter)]
    other = {**copy.deepcopy(INITIAL), "today": "2025-01-02"}  # another scenario: same checklist, another state
    got: dict[str, bool] = {}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        async def one(name: str, initial: dict[str, Any]) -> None:
            [result] = await sb.run(items, copy.deepcopy(initial), _final("shipped"))
            got[name] = result.passed

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, (name, initial) in enumerate((("a1", INITIAL), ("b1", other), ("a2", INITIAL))):
                    tg.start_soon(one, name, initial)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
    assert sorted(requests.episodes) == [1, 2]  # a1 and a2 in one request, b1 in another
    assert got == {"a1": True, "a2": True, "b1": True}


async def test_a_first_trial_cancelled_while_its_batch_runs_leaves_the_others_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancelled mid-request, the first trial's worker is killed (its answers would come out of step); the
    trials that joined it ask again on a fresh worker and still get their own answers."""
    requests = _Requests(monkeypatch)
    spin = ("def check_func(s):\n    x = 0\n    for i in range(2 * 10**6):\n        x += i\n"
            "    return s['orders']['O1']['status'] == 'shipped'\n")
    items = [ChecklistItem(id="spin", description="spins, then reads", validator=spin)]
    got: dict[int, bool] = {}
    async with ValidatorSandbox(timeout_s=10.0, memory_mb=256, workers=1) as sb:
        async def trial(k: int, status: str) -> None:
            [result] = await sb.run(items, copy.deepcopy(INITIAL), _final(status))
            got[k] = result.passed

        async with anyio.create_task_group() as tg:
            first = anyio.CancelScope()
            async with _busy(sb):
                tg.start_soon(_cancellable, first, trial(0, "shipped"))
                await _until(lambda: _waiting(sb) == 1)
                tg.start_soon(trial, 1, "shipped")
                tg.start_soon(trial, 2, "pending")
                await _until(lambda: _waiting(sb) == 3)
            await _until(lambda: requests.episodes)  # the three trials' request is out: their batch runs
            first.cancel()
        restarts = sb.restarts
    assert got == {1: True, 2: False}
    assert requests.episodes[0] == 3 and requests.episodes[1:] in ([2], [1, 1])
    assert restarts == 1  # the cancelled request's worker was killed, and replaced for the trials that asked again


async def test_trials_with_large_states_do_not_share_a_batch_beyond_the_memory_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Parsed, a state holds about ten times its text: trials join a request only while their states' text
    stays within 1/40 of the memory limit (6.4 MB of 256 MB), so grouping never runs a batch out of memory."""
    requests = _Requests(monkeypatch)
    large = {**_final("shipped"), "notes": "x" * 4_000_000}
    items = [ChecklistItem(id="status", description="shipped",
                           validator="def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped'\n")]
    got: list[bool] = []
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        async def trial() -> None:
            [result] = await sb.run(items, copy.deepcopy(INITIAL), large)
            got.append(result.passed)

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for _ in range(3):
                    tg.start_soon(trial)
                # all three wait for the worker at once, each on its own
                await _until(lambda: sb._idle_recv.statistics().tasks_waiting_receive == 3)
    assert got == [True, True, True]
    assert requests.episodes == [1, 1, 1]


@pytest.mark.parametrize("how, reason", [
    ("ctypes.string_at(0)", "the validator crashed the interpreter (SIGSEGV)"),
    ("sum(range(10**14))", "timed out after 1.0 s (it kept the CPU busy past its time and was stopped)"),
])
async def test_a_trial_that_kills_the_shared_batch_takes_no_other_trials_answer(
        monkeypatch: pytest.MonkeyPatch, how: str, reason: str) -> None:
    """A check that crashes the batch process, or burns the CPU past its time, on one trial's state (with the
    real `ctypes` handed to validators, as an escape would): that check fails with the reason; every other check
    of every trial is still answered, on its own trial's state, in a new batch process."""
    requests = _Requests(monkeypatch)
    source = (f"def check_func(s):\n    status = s['orders']['O1']['status']\n    if status == 'hostile':\n"
              f"        {how}\n    return status == 'shipped'\n")
    second = "def check_func(s):\n    return s['orders']['O1']['status'] != 'pending'\n"
    items = [ChecklistItem(id="first", description="may crash", validator=source),
             ChecklistItem(id="second", description="not pending", validator=second)]
    got: dict[str, list[tuple[bool, str | None]]] = {}
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        async def trial(status: str) -> None:
            results = await sb.run(items, copy.deepcopy(INITIAL), _final(status))
            got[status] = [(r.passed, r.reason) for r in results]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, status in enumerate(("hostile", "shipped", "pending")):
                    tg.start_soon(trial, status)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
    assert requests.episodes == [3]  # one request; each trial in batch processes of its own
    assert got == {"hostile": [(False, reason), (True, None)], "shipped": [(True, None), (True, None)],
                   "pending": [(False, None), (False, None)]}


async def test_a_worker_killed_under_a_shared_batch_is_a_fault_every_trial_survives(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The zygote killed from outside while the trials' batch runs: not the validators' doing. The whole
    request is asked again on a fresh worker and every trial gets its own answers; nothing is scored as a
    failed check."""
    import os
    import signal

    requests = _Requests(monkeypatch)
    spin = ("def check_func(s):\n    x = 0\n    for i in range(2 * 10**6):\n        x += i\n"
            "    return s['orders']['O1']['status'] == 'shipped'\n")
    items = [ChecklistItem(id="spin", description="spins, then reads", validator=spin)]
    got: dict[str, tuple[bool, str | None]] = {}
    async with ValidatorSandbox(timeout_s=10.0, memory_mb=256, workers=1) as sb:
        async def trial(status: str) -> None:
            [result] = await sb.run(items, copy.deepcopy(INITIAL), _final(status))
            got[status] = (result.passed, result.reason)

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, status in enumerate(("shipped", "pending")):
                    tg.start_soon(trial, status)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
            await _until(lambda: requests.episodes)  # the request is out: its batch runs
            os.kill(sb.worker_pids()[0], signal.SIGKILL)
        restarts, faults = sb.restarts, list(sb.faults)
    assert got == {"shipped": (True, None), "pending": (False, None)}
    assert requests.episodes == [2, 2] and restarts == 1 and len(faults) == 1


ROUNDING = [  # an honest-looking item that leaves the decimal context changed behind it
    ChecklistItem(id="half", description="a quarter of the total rounds to 2", validator=(
        "import decimal\n"
        "def check_func(s):\n"
        "    quarter = decimal.Decimal(s['orders']['O1']['total']) / 4\n"
        "    ok = quarter.quantize(decimal.Decimal('1')) == 2\n"
        "    decimal.getcontext().rounding = decimal.ROUND_UP\n"
        "    return ok\n")),
    ChecklistItem(id="status", description="shipped",
                  validator="def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped'\n"),
]


async def test_trials_checked_together_get_the_verdicts_they_get_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trial is judged on a fresh interpreter: a check that changes the decimal rounding mode (2.5 rounds
    to 2 under the default, to 3 after it) changes nothing for the trials checked with it. Before each trial got
    batch processes of its own, the trials after the first failed the item on the same final state."""
    requests = _Requests(monkeypatch)
    alone: list[list[bool]] = []
    together: dict[int, list[bool]] = {}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        for _ in range(3):
            alone.append([r.passed for r in await sb.run(ROUNDING, copy.deepcopy(INITIAL), _final("shipped"))])

        async def trial(k: int) -> None:
            results = await sb.run(ROUNDING, copy.deepcopy(INITIAL), _final("shipped"))
            together[k] = [r.passed for r in results]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for k in range(3):
                    tg.start_soon(trial, k)
                await _until(lambda: _waiting(sb) == 3)
    assert requests.episodes == [1, 1, 1, 3]  # three alone, then the three in one request
    assert alone == [[True, True]] * 3
    assert together == {k: [True, True] for k in range(3)}


async def test_a_check_cannot_write_the_answers_of_the_trials_checked_with_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real `os` handed to validators (as an escape would), the first trial's check writes answer lines
    claiming a pass for the other trials' checks to every descriptor it has: the other trials' verdicts are
    those their own states give (the forged lines reach no batch process that answers for them)."""
    requests = _Requests(monkeypatch)
    forged = "".join(f'{{"i": {i}, "passed": true, "reason": null, "duration_s": 0.0, "evidence": []}}\\n'
                     for i in range(4))
    source = ("def check_func(s):\n"
              "    if s['orders']['O1']['status'] == 'hostile':\n"
              "        for fd in range(3, 64):\n"
              "            try:\n"
              f"                os.write(fd, b'{forged}')\n"
              "            except OSError:\n"
              "                pass\n"
              "    return s['orders']['O1']['status'] == 'shipped'\n")
    items = [ChecklistItem(id="shipped", description="shipped", validator=source)]
    got: dict[str, bool] = {}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        async def trial(status: str) -> None:
            [result] = await sb.run(items, copy.deepcopy(INITIAL), _final(status))
            got[status] = result.passed

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, status in enumerate(("hostile", "pending", "cancelled", "shipped")):
                    tg.start_soon(trial, status)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
    assert requests.episodes == [4]
    assert {k: v for k, v in got.items() if k != "hostile"} == {"pending": False, "cancelled": False, "shipped": True}


MISBEHAVIOURS = {
    # lowers its own process's hard CPU limit: the next check of that process can no longer be given its time
    "own-limits": "resource.setrlimit(resource.RLIMIT_CPU, (1000, 1000))",
    # writes garbage to every descriptor it has (its answer pipe among them)
    "garbage": "[_write(fd) for fd in range(3, 64)]",
    # ends its process before answering (libc's exit: `os._exit` is a private name the restrictions refuse)
    "exits": "ctypes.CDLL(None).exit(0)",
    # lowers the limits of the worker's zygote, its parent (same user): the zygote could fork no more batches
    "zygote-limits": "resource.prlimit(os.getppid(), resource.RLIMIT_NOFILE, (4, 4))",
}


@pytest.mark.parametrize("how", sorted(MISBEHAVIOURS))
async def test_a_validator_that_misbehaves_is_charged_and_its_neighbours_get_a_clean_runs_verdicts(
        monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """With the real `os`/`resource` handed to validators (as an escape would), the first check of one trial
    misbehaves. Its check fails with a reason; the neighbours' later verdicts (the next check of its trial, the
    other trials sent with it, a scenario checked after it on the same worker) equal a clean run's; a worker the
    validator changed is replaced, and nothing becomes an infrastructure fault."""
    requests = _Requests(monkeypatch)
    source = ("def _write(fd):\n    try:\n        os.write(fd, b'garbage\\n{not json\\n')\n    except OSError:\n"
              "        pass\n"
              f"def check_func(s):\n    if s['orders']['O1']['status'] == 'hostile':\n        {MISBEHAVIOURS[how]}\n"
              "    return s['orders']['O1']['status'] == 'shipped'\n")
    second = "def check_func(s):\n    return s['orders']['O1']['status'] != 'pending'\n"
    items = [ChecklistItem(id="first", description="may misbehave", validator=source),
             ChecklistItem(id="second", description="not pending", validator=second)]
    later = {**copy.deepcopy(INITIAL), "today": "2025-01-02"}  # another scenario, after the request
    got: dict[str, list[tuple[bool, str | None]]] = {}
    # seccomp refuses prlimit on another process (tests/security/test_validator_limits_ipc.py); without it, as
    # on a machine without libseccomp, the zygote must notice the change itself: that is what this case shows
    seam: dict[str, Any] = {"grant_os": True, **({"skip": ["seccomp"]} if how == "zygote-limits" else {})}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam=seam) as sb:
        async def trial(status: str, initial: dict[str, Any] = INITIAL) -> None:
            results = await sb.run(items, copy.deepcopy(initial), _final(status))
            got[status] = [(r.passed, r.reason) for r in results]

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n, status in enumerate(("shipped", "hostile", "pending")):
                    tg.start_soon(trial, status)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
        await trial("cancelled", later)
        await trial("shipped", later)
        restarts, faults = sb.restarts, list(sb.faults)
    assert requests.episodes[0] == 3
    hostile_first, hostile_second = got.pop("hostile")
    assert hostile_first[0] is False and hostile_first[1]  # the misbehaving check: failed, with the reason
    assert got == {"shipped": [(True, None), (True, None)], "pending": [(False, None), (False, None)],
                   "cancelled": [(False, None), (True, None)]}
    assert faults == []
    if how == "zygote-limits":  # the worker itself was changed: replaced, and the trial charged as a whole
        assert restarts == 1 and hostile_second[0] is False
        assert "changed the limits of the sandbox's worker (RLIMIT_NOFILE)" in str(hostile_first[1])
    else:
        assert restarts == 0 and hostile_second == (True, None)


def test_trials_that_ended_in_the_same_state_share_the_zygotes_parse_of_it() -> None:
    """Each trial still runs in batch processes of its own (the test above), on what the zygote parsed: a final
    state (or transcript) of the same text as another trial's of the request is parsed once for both. A request of
    probe states run together in one batch process ("together") parses each apart."""
    import json

    from envscaler_mcp.sandbox.relay import _episode_states
    from envscaler_mcp.sandbox.runner import Pristine

    shipped, pending = (json.dumps(_final(s)).encode() for s in ("shipped", "pending"))
    told = json.dumps(_transcript("$10")).encode()
    checks = [{"i": i + 3 * e, "e": e, "kind": kind, "prepared": (None, "", False, False)}
              for e in range(3) for i, kind in enumerate(("state", "state", "transcript"))]
    texts = [shipped, told, pending, told, shipped, told]
    initial = Pristine(json.dumps(INITIAL).encode())
    states = _episode_states(initial, texts, 3, checks)
    finals = [final for _, final, _ in states]
    assert finals[0] is finals[2] and finals[0] is not finals[1]
    assert states[0][2] is states[1][2] is states[2][2] and states[0][2] is not finals[0]
    assert [final.lend(keep=True) for final in finals] == [_final("shipped"), _final("pending"), _final("shipped")]
    apart = _episode_states(initial, texts, 3, checks, share=False)
    assert apart[0][1] is not apart[2][1] and apart[0][2] is not apart[1][2]


async def test_a_check_that_changes_a_shared_final_state_changes_no_other_trials_copy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three trials of one request ended in the same final state, so the zygote parses it once for all three. The
    first check of every trial empties and rewrites the state it was given; the second reads it: each trial's
    second check still sees its state as the episode left it (the trials' batch processes share a parse, never
    what a check did to it)."""
    requests = _Requests(monkeypatch)
    wrecker = ("def check_func(s):\n    s['orders']['O1']['status'] = 'pending'\n    s['orders'].clear()\n"
               "    s['stolen'] = True\n    return True\n")
    reader = "def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped' and 'stolen' not in s\n"
    items = [ChecklistItem(id="wreck", description="changes its state", validator=wrecker),
             ChecklistItem(id="read", description="still shipped", validator=reader)]
    got: list[list[tuple[bool, str | None]]] = []
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        async def trial() -> None:
            results = await sb.run(items, copy.deepcopy(INITIAL), _final("shipped"))
            got.append([(r.passed, r.reason) for r in results])

        async with anyio.create_task_group() as tg:
            async with _busy(sb):
                for n in range(3):
                    tg.start_soon(trial)
                    await _until(lambda n=n: _waiting(sb) == n + 1)
    assert requests.episodes[0] == 3  # one request: the final state parsed once for the three trials
    assert got == [[(True, None), (True, None)]] * 3
