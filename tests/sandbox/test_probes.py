"""Probe states of one scenario (the QA gate's: the initial state, the reference's, wrong solutions', mutations)
judged in one request and one batch process (`ValidatorSandbox.run_probes`): each probe gets the verdicts
`run` gives it alone, its own state and transcript unchanged by the checks before it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from envscaler_mcp.sandbox import process
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from tests.sandbox.test_trials import CHECKLIST as TRIALS_CHECKLIST
from tests.sandbox.test_trials import INITIAL

pytestmark = pytest.mark.anyio

CHECKLIST = [*TRIALS_CHECKLIST, ChecklistItem(id="none", description="no validator", validator=None)]


def _final(status: str, pad: int = 0) -> dict[str, Any]:
    final = copy.deepcopy(INITIAL)
    final["orders"]["O1"]["status"] = status
    if pad:
        final["pad"] = "x" * pad
    return final


def _transcript(answer: str) -> dict[str, Any]:
    return {"calls": [], "answer": answer, "told_user": []}


class _Requests:
    """Spy on the requests the sandbox sends: episodes and the `together` flag of each."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[int, bool]] = []
        real = process.Worker.ask

        async def ask(worker: process.Worker, header: dict[str, Any], *args: Any) -> Any:
            self.sent.append((int(header.get("episodes", 1)), bool(header.get("together"))))
            return await real(worker, header, *args)

        monkeypatch.setattr(process.Worker, "ask", ask)


def _shown(results: list[Any]) -> list[tuple[str, bool, str | None]]:
    return [(r.item_id, r.passed, r.reason) for r in results]


async def test_probes_in_one_request_get_the_verdicts_each_gets_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    initial = copy.deepcopy(INITIAL)
    probes = [(CHECKLIST, initial, _transcript("")),  # the untouched initial state, as the gate's first step
              (CHECKLIST, _final("shipped"), _transcript("Shipped; the total was $10.")),
              (CHECKLIST[1:3], _final("pending"), _transcript("It was $10.")),  # a subset of the items
              (CHECKLIST, _final("shipped"), None),  # no transcript: its transcript item cannot run
              ([], _final("shipped"), None)]
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        requests = _Requests(monkeypatch)
        together = await sb.run_probes(initial, probes)
        assert requests.sent == [(4, True)]  # the probe without items sends nothing
        alone = [await sb.run(items, initial, final, transcript) for items, final, transcript in probes]
    assert [_shown(r) for r in together] == [_shown(r) for r in alone]
    assert [[r.passed for r in results] for results in together] == [
        [True, False, False, False], [True, True, True, False], [False, True], [True, True, False, False], []]
    assert together[3][2].reason == "a transcript check needs a transcript, and none was given"
    assert together[0][3].reason == "the checklist item has no validator"
    assert initial == INITIAL and all(final["orders"] for _, final, _ in probes)  # the caller's states unchanged


async def test_probes_share_one_batch_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real `os` handed to validators, a check counts the checks its process has run: the probes of
    one request run in one process (one fork), while `run`'s trials each start from zero."""
    counter = ("def check_func(s):\n    seen = int(os.environ.get('CHECKS_SEEN', '0')) + 1\n"
               "    os.environ['CHECKS_SEEN'] = str(seen)\n    return seen == 1\n")
    items = [ChecklistItem(id="first", description="first in its process", validator=counter)]
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        together = await sb.run_probes(INITIAL, [(items, _final(s), None) for s in ("a", "b", "c")])
        alone = [await sb.run(items, INITIAL, _final(s)) for s in ("a", "b")]
    assert [r.passed for [r] in together] == [True, False, False]
    assert [r.passed for [r] in alone] == [True, True]


async def test_probes_beyond_the_memory_budget_go_in_more_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """States of more than a request's share of the memory limit (1/40: 1.6 MB at 64 MB) are split."""
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=64, workers=1) as sb:
        requests = _Requests(monkeypatch)
        statuses = ["shipped", "pending", "shipped", "lost"]
        got = await sb.run_probes(INITIAL, [(CHECKLIST[1:2], _final(s, pad=700_000), None) for s in statuses])
    assert [[r.passed for r in results] for results in got] == [[True], [False], [True], [False]]
    assert requests.sent == [(2, True), (2, True)]


async def test_a_probe_whose_check_times_out_leaves_the_others_their_verdicts() -> None:
    spin = ("def check_func(s):\n    if s['orders']['O1']['status'] == 'stuck':\n        while True:\n"
            "            pass\n    return s['orders']['O1']['status'] == 'shipped'\n")
    items = [ChecklistItem(id="spin", description="spins on one state", validator=spin), CHECKLIST[1]]
    async with ValidatorSandbox(timeout_s=0.5, memory_mb=256, workers=1) as sb:
        got = await sb.run_probes(INITIAL, [(items, _final(s), None) for s in ("shipped", "stuck", "pending")])
    assert [[(r.passed, r.reason) for r in results] for results in got] == [
        [(True, None), (True, None)], [(False, "timed out after 0.5 s"), (False, None)],
        [(False, None), (False, None)]]


LEAKS = [  # honest-looking items that leave the interpreter changed behind them
    ChecklistItem(id="rounding", description="a quarter of the total rounds to 2", validator=(
        "import decimal\n"
        "def check_func(s):\n"
        "    ok = (decimal.Decimal(s['orders']['O1']['total']) / 4).quantize(decimal.Decimal('1')) == 2\n"
        "    decimal.getcontext().rounding = decimal.ROUND_UP\n"
        "    return ok\n")),
    ChecklistItem(id="class", description="the total is the mean", validator=(
        "import statistics\n"
        "def check_func(s):\n"
        "    ok = statistics.NormalDist(s['orders']['O1']['total'], 1).mean == 10\n"
        "    statistics.NormalDist.mean = 99\n"
        "    return ok\n")),
    ChecklistItem(id="abc", description="orders are no sequence", validator=(
        "import collections.abc\n"
        "def check_func(s):\n"
        "    ok = not isinstance(s['orders'], collections.abc.Sequence)\n"
        "    collections.abc.Sequence.register(dict)\n"
        "    return ok\n")),
    ChecklistItem(id="view", description="the state is JSON", validator=(
        "import json\n"
        "def check_func(s):\n"
        "    ok = json.loads(json.dumps(s)) == s\n"
        "    json.loads = lambda text: None\n"
        "    return ok\n")),
    # a value replaced under its own key in a module's dict (its keys unchanged): a flag the next probe reads
    ChecklistItem(id="dict-value", description="first seen", validator=(
        "import copy\n"
        "def check_func(s):\n"
        "    key = next(iter(copy.dispatch_table))\n"
        "    first = not isinstance(copy.dispatch_table[key], str)\n"
        "    copy.dispatch_table[key] = 'seen'\n"
        "    return first\n")),
]


@pytest.mark.parametrize("item", LEAKS, ids=lambda item: item.id)
async def test_a_probe_that_changes_the_interpreter_leaves_the_next_a_fresh_one(
        item: ChecklistItem, monkeypatch: pytest.MonkeyPatch) -> None:
    """The decimal context, a class's attribute, an ABC's registry, a module's member: whatever one probe's
    checks change, the next probe's checks do not see (they run in a fresh batch process), so the verdicts are
    those of each probe alone; the request is still one."""
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, workers=1) as sb:
        requests = _Requests(monkeypatch)
        together = await sb.run_probes(INITIAL, [([item], _final("shipped"), None)] * 3)
        alone = [await sb.run([item], INITIAL, _final("shipped")) for _ in range(2)]
    assert requests.sent[0] == (3, True)
    assert [[r.passed for r in results] for results in (*together, *alone)] == [[True]] * 5
