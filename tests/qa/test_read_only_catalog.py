"""The bundled catalog's read-only scenarios: at least two per environment, each passing the QA gate with
its answer probes (every fact of the reference answer is checked by some transcript item)."""

from __future__ import annotations

import anyio
import pytest

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.scenario.models import Scenario

# hand-authored environments: a synthesized one has the questions its model wrote, if any
ENVS = [env_id for env_id in list_env_ids() if get_skeleton(env_id).provenance.source == "hand-authored"]


def read_only(env_id: str) -> list[Scenario]:
    return [s for s in scenarios_for(env_id) if s.reference_answer]


@pytest.mark.parametrize("env_id", ENVS)
def test_each_environment_has_read_only_scenarios_checked_on_the_transcript(env_id: str) -> None:
    scenarios = read_only(env_id)
    assert len(scenarios) >= 2
    for sc in scenarios:
        kinds = [c.kind for c in sc.checklist]
        assert kinds.count("transcript") >= 3 and kinds[-1] == "state", sc.title
        assert sc.reference_solution and sc.difficulty == len(sc.reference_solution)


@pytest.mark.slow
def test_read_only_scenarios_pass_the_gate_with_answer_probes() -> None:
    groups = [(env_id, read_only(env_id)) for env_id in ENVS]
    reports = anyio.run(lambda: check_groups(groups, GateSettings(transport="memory")))
    assert {f"{r.env_id}/{r.title}": r.reasons() for r in reports if r.reasons()} == {}
    for report in reports:
        assert report.step("answer_probes").status == "pass"
        assert all(p.caught_by for p in report.answer_probes)
    # every answer but one (names and roles only) states numbers, dates or ids the probes change
    assert sum(bool(r.answer_probes) for r in reports) >= len(reports) - 1
