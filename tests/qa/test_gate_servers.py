"""The QA gate against real generated servers over HTTP: the mini_shop fixture and the bundled catalog."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.catalog.paths import environments_dir
from envscaler_mcp.catalog.store import load_scenarios, load_skeleton, scenarios_for
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton

pytestmark = pytest.mark.anyio

MINI_SHOP = Path(__file__).resolve().parents[1] / "fixtures" / "mini_shop"


async def test_mini_shop_scenarios_pass_and_a_broken_copy_is_rejected() -> None:
    skeleton = load_skeleton(MINI_SHOP)
    scenarios = load_scenarios(MINI_SHOP / "scenarios.jsonl")
    assert len(scenarios) == 2
    first = scenarios[0]
    # Same task, but one validator is already True before anything happens and the solution stops early.
    always_true = ChecklistItem(id="c9", description="Has nothing happened?", claims_change=True,
                                validator="def check_func(final_state):\n    return True\n")
    broken = first.model_copy(update={
        "checklist": [*first.checklist, always_true],
        "reference_solution": first.reference_solution[:1],
    }).with_id()
    reports = await check_groups([(skeleton, [*scenarios, broken])], GateSettings(transport="http", mutation=True))
    by_id = {r.scenario_id: r for r in reports}
    for sc in scenarios:
        assert by_id[sc.id].passed, by_id[sc.id].reasons()
        assert [c.ok for c in by_id[sc.id].replay] == [True] * len(sc.reference_solution)
    bad = by_id[broken.id]
    assert not bad.passed
    assert bad.step("initial_false").reasons == ["c9 claims a change but is already True on the initial state"]
    assert bad.step("final_true").status == "fail"


def _bundled() -> list[tuple[EnvSkeleton, list]]:
    groups = []
    root = environments_dir()
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        scenarios = scenarios_for(folder.name)
        if not scenarios:
            continue
        skeleton = (load_skeleton(folder) if (folder / "skeleton.json").is_file()
                    else build_skeleton_from_dir(folder))
        groups.append((skeleton, scenarios))
    return groups


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_every_bundled_scenario_passes_the_gate() -> None:
    groups = _bundled()
    if not groups:
        pytest.skip("no bundled scenarios in this checkout")
    reports = await check_groups(groups, GateSettings(transport="http"))
    assert len(reports) == sum(len(s) for _, s in groups)
    rejected = {f"{r.env_id}/{r.scenario_id}": r.reasons() for r in reports if not r.passed}
    assert rejected == {}
    # every hand-authored task carries a plausible wrong solution, and the gate saw each one fail the checklist;
    # every read-only question had each fact of its reference answer, changed, caught (its wrong answers).
    # A synthesized environment's scenarios passed the synthesis gate (mutation, state check) instead.
    authored = {sk.id for sk, _ in groups if sk.provenance.source == "hand-authored"}
    groups = [(sk, s) for sk, s in groups if sk.id in authored]
    reports = [r for r in reports if r.env_id in authored]
    steps = [{s.name for s in r.steps} for r in reports]
    assert all("wrong_solutions" in names or "answer_probes" in names for names in steps)
    assert all(r.step("wrong_solutions").status == "pass" and r.wrong_solutions
               for r, names in zip(reports, steps, strict=True) if "wrong_solutions" in names)
    assert all(r.step("answer_probes").status == "pass" and all(p.caught_by for p in r.answer_probes)
               for r, names in zip(reports, steps, strict=True) if "answer_probes" in names)
    assert sum("answer_probes" in names for names in steps) == 2 * len(groups)
