"""Every verdict of an episode, on every transport (memory, pipe, HTTP, stdio): the checklist (state and
transcript items), validator errors and time-outs, the state check and the observation check, and success.

One mini_shop server per transport serves the module; the reference of each scenario is replayed once per
server. Each agent is scripted, and each test names the one-line bug it would catch: a verdict read from the
reference's final state instead of the agent's, an error counted as a pass, a transport that loses the
tools' read-only marks or a result's data."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig, EpisodeResult
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.references.reference import Reference, ReferenceCache
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from tests.harness.shop import ALICE, BOB, ENV_INFO, SKELETON, calls, shop_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TRANSPORTS = ["memory", "pipe", "http", "stdio"]
READ_ONLY = {"get_order", "list_orders"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module", params=TRANSPORTS)
async def served(request: pytest.FixtureRequest, anyio_backend: str) -> AsyncIterator[tuple[Any, ReferenceCache]]:
    async with shop_server(request.param) as server:
        yield server, ReferenceCache()


@pytest.fixture(scope="module")
async def sandbox(anyio_backend: str) -> AsyncIterator[SandboxChecker]:
    async with SandboxChecker(timeout_s=1.0) as checker:
        yield checker


def agent(*solution: ToolCall | tuple[str, dict[str, Any]], answer: str = "Task completed.") -> MockProvider:
    """A scripted agent: these calls, one per turn, then the answer."""
    pairs = [(c.tool, c.arguments) if isinstance(c, ToolCall) else c for c in solution]
    return MockProvider([*(calls(p) for p in pairs), answer])


async def episode(served: tuple[Any, ReferenceCache], sandbox: SandboxChecker, scenario: Scenario,
                  script: MockProvider, **config: Any) -> EpisodeResult:
    server, references = served
    reference = await references.get(scenario, server.episode, SKELETON.free_fields)
    assert reference.final_state is not None, reference.unavailable
    return await run_episode(scenario, source=server, agent=script, checker=sandbox, env_info=ENV_INFO,
                             reference=reference, config=EpisodeConfig(**config))


def verdicts(r: EpisodeResult) -> tuple[Any, ...]:
    return (r.status, r.score, [c.status for c in r.checks], r.state_check, r.observation.status, r.success)


async def test_the_reference_passes_every_verdict(served: Any, sandbox: SandboxChecker) -> None:
    for scenario in (BOB, ALICE):
        r = await episode(served, sandbox, scenario, agent(*scenario.reference_solution))
        n = len(scenario.checklist)
        assert verdicts(r) == ("completed", 1.0, ["pass"] * n, "pass", "passed", True)
        assert r.unexpected_changes == [] and r.observation.evidence == []
        assert r.observation.observed == r.observation.required == (1 if scenario is BOB else 2)


async def test_a_lazy_agent_fails_only_the_observation_check(served: Any, sandbox: SandboxChecker) -> None:
    # The reference without its read-only calls: the state is right, nothing was looked up.
    for scenario, looked_up in ((BOB, "get_order"), (ALICE, "list_orders")):
        lazy = [c for c in scenario.reference_solution if c.tool not in READ_ONLY]
        r = await episode(served, sandbox, scenario, agent(*lazy))
        assert verdicts(r) == ("completed", 1.0, ["pass"] * len(scenario.checklist), "pass", "failed", False)
        assert r.observation.observed == 0 and r.observation.evidence
        assert all(f"reference call 1 {looked_up}(" in e for e in r.observation.evidence)
        off = await episode(served, sandbox, scenario, agent(*lazy), observation="off")
        assert (off.observation.status, off.success) == ("not_applicable", True)


async def test_a_lookup_through_another_tool_is_observed(served: Any, sandbox: SandboxChecker) -> None:
    # Bob's order read from a list of his orders instead of get_order.
    other = [("list_orders", {"customer": "bob"}), *BOB.reference_solution[1:]]
    r = await episode(served, sandbox, BOB, agent(*other))
    assert verdicts(r) == ("completed", 1.0, ["pass", "pass"], "pass", "passed", True)


async def test_doing_nothing_fails_on_the_agents_own_final_state(served: Any, sandbox: SandboxChecker) -> None:
    # Scoring the reference's final state instead of the agent's would pass this episode.
    r = await episode(served, sandbox, BOB, agent())
    assert verdicts(r) == ("completed", 0.0, ["fail", "fail"], "fail", "failed", False)
    assert r.diff == [] and {c.kind for c in r.unexpected_changes} == {"mismatch"}
    alice = await episode(served, sandbox, ALICE, agent())
    assert verdicts(alice) == ("completed", 0.0, ["fail", "fail", "fail", "pass"], "fail", "failed", False)


async def test_an_extra_destructive_call_fails_the_state_check(served: Any, sandbox: SandboxChecker) -> None:
    extra = [*BOB.reference_solution, ToolCall(tool="cancel_order", arguments={"order_id": "O-1004"})]
    r = await episode(served, sandbox, BOB, agent(*extra))
    assert verdicts(r) == ("completed", 1.0, ["pass", "pass"], "fail", "passed", False)
    assert [(c.path, c.kind) for c in r.unexpected_changes] == [("orders['O-1004'].status", "collateral")]


async def test_a_wrong_argument_fails(served: Any, sandbox: SandboxChecker) -> None:
    wrong = [*ALICE.reference_solution[:2], ToolCall(tool="cancel_order", arguments={"order_id": "O-1002",
                                                                                      "reason": "moving abroad"})]
    r = await episode(served, sandbox, ALICE, agent(*wrong))
    assert verdicts(r) == ("completed", 0.3333, ["pass", "fail", "fail", "pass"], "fail", "passed", False)
    kinds = {(c.path, c.kind) for c in r.unexpected_changes}
    assert ("orders['O-1002'].status", "collateral") in kinds and ("orders['O-1004'].status", "mismatch") in kinds


BROKEN = [
    ChecklistItem(id="raises", description="raises", validator="def check_func(final_state):\n    return 1 / 0\n"),
    ChecklistItem(id="loops", description="never returns",
                  validator="def check_func(final_state):\n    while True:\n        pass\n"),
    ChecklistItem(id="not_bool", description="returns a non-bool",
                  validator="def check_func(final_state):\n    return 'yes'\n"),
]


async def test_a_validator_error_or_timeout_is_never_a_pass(served: Any, sandbox: SandboxChecker) -> None:
    scenario = BOB.model_copy(update={"checklist": [*BOB.checklist, *BROKEN]})
    r = await episode(served, sandbox, scenario, agent(*BOB.reference_solution))
    assert [c.status for c in r.checks] == ["pass", "pass", "error", "error", "error"]
    reasons = {c.id: c.reason for c in r.checks}
    assert reasons["raises"].startswith("raised ZeroDivisionError") and "timed out" in reasons["loops"]
    assert "not a bool" in reasons["not_bool"]
    assert (r.score, r.success, r.state_check, r.observation.status) == (0.4, False, "pass", "passed")


TRANSCRIPT = [
    ChecklistItem(id="told", description="told the order and its total", kind="transcript",
                  validator="from transcript_checks import says\n\ndef check_func(transcript):\n"
                            "    return says(transcript, 'O-1002', 12.0)\n"),
    ChecklistItem(id="looked", description="looked the order up", kind="transcript",
                  validator="from transcript_checks import called\n\ndef check_func(transcript):\n"
                            "    return called(transcript, 'get_order', order_id='o-1002')\n"),
]


async def test_transcript_items_read_what_the_agent_did_and_said(served: Any, sandbox: SandboxChecker) -> None:
    scenario = BOB.model_copy(update={"checklist": [*BOB.checklist, *TRANSCRIPT]})
    right = await episode(served, sandbox, scenario,
                          agent(*BOB.reference_solution, answer="Order O-1002 ($12.00) is cancelled."))
    assert verdicts(right) == ("completed", 1.0, ["pass"] * 4, "pass", "passed", True)
    assert any("O-1002" in e for e in right.checks[2].evidence)
    vague = await episode(served, sandbox, scenario, agent(*BOB.reference_solution[1:], answer="Done."))
    assert [c.status for c in vague.checks] == ["pass", "pass", "fail", "fail"]
    assert (vague.score, vague.success, vague.observation.status) == (0.5, False, "failed")


async def test_the_reference_records_every_result_on_every_transport(served: Any) -> None:
    server, references = served
    reference: Reference = await references.get(BOB, server.episode, SKELETON.free_fields)
    texts = [c.result_text for c in reference.calls]
    assert '"order_id": "O-1002"' in texts[0] and '"Gift wrap"' in texts[0]
    assert [c.ok for c in reference.calls] == [True] * 3 and reference.unstable_results == []
