from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from envscaler_mcp.skeleton.models import Provenance


def _scenario(task: str) -> Scenario:
    return Scenario(
        env_id="demo",
        task=task,
        initial_state={"items": {}},
        checklist=[ChecklistItem(id="c1", description="Has x?", validator="def check_func(final_state):\n    return True\n")],
        provenance=Provenance(source="hand-authored"),
    )


def test_scenario_id_is_a_stable_content_hash() -> None:
    a, b = _scenario("do x").with_id(), _scenario("do x").with_id()
    assert a.id == b.id and a.id.startswith("sc-") and len(a.id) == 19
    assert _scenario("do y").with_id().id != a.id
