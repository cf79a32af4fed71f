"""Perturbed agents over the bundled catalog (offline, in memory): each must get the verdict its work deserves.

* the reference solution succeeds on every scenario;
* lazy (the reference without its read-only calls): fails wherever the reference looked something up that
  carries information (the observation check), succeeds where it had nothing to look up;
* doing nothing: never succeeds;
* the reference plus one harmful extra call (qa.wrong_probes builds it: a state change aimed at another
  record) and the reference with one wrong argument (a state-changing call aimed at another record instead):
  never succeed;
* a hedging answerer (the reference's calls, then its answer with the first amount or number given alongside a
  rival, "$119.85 or $120.85"): never succeeds on a read-only question.
Acting a turn early needs multi-turn scenarios, which the catalog has none of: tests/harness/test_turns.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp._choices import Transport
from envscaler_mcp.catalog.paths import environments_dir
from envscaler_mcp.catalog.store import load_skeleton, scenarios_for
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.wrong_probes import extra_call_candidates, harmful_extra_call
from envscaler_mcp.scenario.models import Scenario, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _catalog() -> list[tuple[EnvSkeleton, list[Scenario]]]:
    folders = sorted(p for p in environments_dir().iterdir() if (p / "skeleton.json").is_file())
    return [(sk, scenarios_for(sk.id)) for sk in map(load_skeleton, folders)]


def _plans(catalog: list[tuple[EnvSkeleton, list[Scenario]]]) -> list[EnvPlan]:
    return [EnvPlan(env_id=sk.id, env_info=EnvInfo(name=sk.name), scenarios=scs,
                    hashes={"environment": sk.content_hash(), **scenario_hashes(scs)}) for sk, scs in catalog]


async def _run(out: Path, catalog: list[tuple[EnvSkeleton, list[Scenario]]],
               solutions: dict[str, list[ToolCall]], transport: Transport) -> dict[str, EpisodeResult]:
    plans = [p.model_copy(update={"scenarios": [s for s in p.headers() if s.id in solutions]}) for p in _plans(catalog)]
    plans = [p for p in plans if p.scenarios]
    config = RunConfig(envs=[p.env_id for p in plans], agent="oracle", concurrency=4, transport=transport,
                       progress=False)
    agent = Seat("oracle", factory=lambda sc: OraclePolicy(sc, solution=solutions[sc.id]))
    await run_eval(config, out, plans=plans, agent=agent)
    return {r.scenario_id: r for r in RunDir(out).read_results()}


async def _wrong(catalog: list[tuple[EnvSkeleton, list[Scenario]]]
                 ) -> tuple[dict[str, list[ToolCall]], dict[str, list[ToolCall]]]:
    """Per scenario that changes the state: (reference + a harmful extra call, reference with one wrong
    argument)."""
    extra: dict[str, list[ToolCall]] = {}
    wrong: dict[str, list[ToolCall]] = {}
    for skeleton, scenarios in catalog:
        async with launch_server(skeleton, transport="memory", scenarios=()) as server:
            for scenario in scenarios:
                found = await harmful_extra_call(scenario, server.episode)
                if found.call is not None:
                    extra[scenario.id] = [*scenario.reference_solution, found.call]
                aimed = next((c for c, why in extra_call_candidates(scenario, found.changing, set())
                              if "instead of" in why), None)
                if aimed is not None:
                    index = max(n for n in found.changing if scenario.reference_solution[n].tool == aimed.tool)
                    calls = list(scenario.reference_solution)
                    calls[index] = aimed
                    wrong[scenario.id] = calls
    return extra, wrong


# Every transport: in memory, over HTTP (the harness's own HTTP transport and the reference replay's closing
# read), the pipe and stdio.
TRANSPORTS = pytest.mark.parametrize("transport", ["memory", "http", "pipe", "stdio"])


@TRANSPORTS
async def test_perturbed_agents_get_the_verdict_their_work_deserves(tmp_path: Path, transport: Transport) -> None:
    catalog = _catalog()
    scenarios = [s for _, scs in catalog for s in scs]
    read_only = {t.name for sk, _ in catalog for t in sk.tools if t.kind == "query"}
    reference = await _run(tmp_path / "reference", catalog, {s.id: s.reference_solution for s in scenarios}, transport)
    assert [(sid, r.status, r.observation.status) for sid, r in reference.items() if not r.success] == []

    lazy_solutions = {s.id: [c for c in s.reference_solution if c.tool not in read_only] for s in scenarios}
    lazy = await _run(tmp_path / "lazy", catalog, lazy_solutions, transport)
    looked_up = {sid for sid, r in reference.items() if r.observation.status == "passed"}
    assert {sid for sid, r in lazy.items() if r.observation.status == "failed"} == looked_up
    assert {sid for sid, r in lazy.items() if r.success} == set(lazy) - looked_up
    assert len(looked_up) > len(scenarios) // 2  # most scenarios look something up
    # Before the observation check (checklist and state check only), most lazy agents passed.
    checklist_and_state = {sid for sid, r in lazy.items() if r.score == 1.0 and r.state_check != "fail"}
    print(f"lazy: {len(lazy)} episodes, {len(checklist_and_state)} succeed under checklist+state, "
          f"{sum(bool(r.success) for r in lazy.values())} under checklist+state+observation")

    extra, wrong = await _wrong(catalog)
    assert len(extra) > len(scenarios) // 2 and len(wrong) > len(scenarios) // 3
    print(f"built: {len(extra)} extra-call and {len(wrong)} wrong-argument solutions of {len(scenarios)} scenarios")
    nothing: dict[str, list[ToolCall]] = {s.id: [] for s in scenarios}
    for label, solutions in (("nothing", nothing), ("extra call", extra), ("wrong argument", wrong)):
        results = await _run(tmp_path / label.replace(" ", "_"), catalog, solutions, transport)
        assert len(results) == len(solutions)
        assert [(label, sid, r.score, r.state_check) for sid, r in results.items() if r.success is not False] == []


def _hedged(answer: str) -> str | None:
    """The answer with its first amount or number given alongside a rival ("$119.85 or $120.85")."""
    import re

    match = (re.search(r"\$\d[\d,]*(?:\.\d+)?", answer)  # an amount first, else a number that is no id's part
             or re.search(r"(?<![\w-])\d+(?:\.\d+)?(?![\w-])", answer))
    if match is None:
        return None
    value = match.group(0)
    digits = value.lstrip("$").replace(",", "")
    rival = f"{float(digits) + 1:.2f}" if "." in digits else str(int(digits) + 1)
    rival = ("$" if value.startswith("$") else "") + rival
    return answer[:match.end()] + f" or {rival}" + answer[match.end():]


@TRANSPORTS
async def test_a_hedging_answerer_never_succeeds_where_the_reference_answer_does(tmp_path: Path, transport: Transport) -> None:
    catalog = _catalog()
    questions = {s.id: s for _, scs in catalog for s in scs if s.reference_answer and _hedged(s.reference_answer)}
    assert len(questions) >= 10  # the catalog's read-only questions state amounts, counts and dates
    plans = [p.model_copy(update={"scenarios": [s for s in p.headers() if s.id in questions]}) for p in _plans(catalog)]
    plans = [p for p in plans if p.scenarios]
    config = RunConfig(envs=[p.env_id for p in plans], agent="oracle", concurrency=4, transport=transport,
                       progress=False)
    hedging = Seat("oracle", factory=lambda sc: OraclePolicy(
        sc.model_copy(update={"reference_answer": _hedged(sc.reference_answer or "")})))
    await run_eval(config, tmp_path / "hedged", plans=plans, agent=hedging)
    results = RunDir(tmp_path / "hedged").read_results()
    assert len(results) == len(questions)
    assert [(r.scenario_id, r.final_answer) for r in results if r.success is not False] == []
