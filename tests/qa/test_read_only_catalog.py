"""The bundled catalog's read-only scenarios: at least two per environment, each passing the QA gate with
its answer probes (every fact of the reference answer is checked by some transcript item)."""

from __future__ import annotations

import pytest

from envscaler_mcp.catalog.store import list_env_ids, scenarios_for
from envscaler_mcp.qa.readonly import gate_problems

ENVS = list_env_ids()


def read_only(env_id: str) -> list:
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
    problems = [p for env_id in ENVS for p in gate_problems(env_id, read_only(env_id))]
    assert problems == []
