"""The consistency step's check for records a reference acts on that the task never asked about (qa/unasked.py):
an extra destructive call is named with its record; the side effects of the task's own calls, records the task
implies and records a checklist item is about are kept."""

from __future__ import annotations

from typing import Any

from envscaler_mcp.compare.diff import diff_states
from envscaler_mcp.qa.consistency import consistency_problems
from envscaler_mcp.qa.unasked import unasked_changes
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

STATE: dict[str, Any] = {
    "customers": {"C1": {"id": "C1", "name": "Alice Moreau"}, "C2": {"id": "C2", "name": "Bruno Silva"}},
    "products": {"P1": {"id": "P1", "title": "Desk Lamp", "stock": 4}, "P2": {"id": "P2", "title": "Chair", "stock": 1}},
    "orders": {"O-1": {"id": "O-1", "customer": "C1", "product": "P1", "status": "pending"},
               "O-2": {"id": "O-2", "customer": "C2", "product": "P2", "status": "pending"},
               "O-3": {"id": "O-3", "customer": "C1", "product": "P2", "status": "pending", "agent": "AG2"}},
    "agents": {"AG1": {"id": "AG1", "name": "Dana"}, "AG2": {"id": "AG2", "name": "Ravi"}},
}
ITEM = ChecklistItem(id="c1", description="Has order O-1 been cancelled?",
                     validator="def check_func(final_state):\n    return final_state['orders']['O-1']['status'] == 'x'\n")


def cancel(order: str) -> ToolCall:
    return ToolCall(tool="cancel_order", arguments={"order_id": order})


def scenario(task: str, *calls: ToolCall, items: tuple[ChecklistItem, ...] = (ITEM,)) -> Scenario:
    return Scenario(env_id="e", task=task, initial_state=STATE, checklist=list(items), reference_solution=list(calls),
                    provenance=Provenance(source="hand-authored"))


def after(*orders: str, **changes: Any) -> dict[str, Any]:
    """The state once `orders` are cancelled, each order's product restocked (a side effect no argument names)."""
    state: dict[str, Any] = {name: {k: dict(r) for k, r in records.items()} for name, records in STATE.items()}
    for order in orders:
        state["orders"][order]["status"] = "cancelled"
        state["products"][state["orders"][order]["product"]]["stock"] += 1
    for name, records in changes.items():
        state[name].update(records)
    return state


def test_a_cancelled_orders_restocked_product_is_a_side_effect_not_an_extra_call() -> None:
    sc = scenario("Please cancel order O-1.", cancel("O-1"))
    assert unasked_changes(sc, after("O-1")) == []
    assert consistency_problems(sc, after("O-1")) == []


def test_an_extra_cancel_of_another_order_is_named_with_its_call_and_record() -> None:
    sc = scenario("Please cancel order O-1.", cancel("O-1"), cancel("O-2"))
    assert unasked_changes(sc, after("O-1", "O-2")) == [
        "call 2 cancel_order changes orders O-2, a record the task neither names nor implies and no checklist item "
        "is about (a call the task did not ask for)"]
    assert consistency_problems(sc, after("O-1", "O-2")) == unasked_changes(sc, after("O-1", "O-2"))
    # a call that reads O-2 (the replay changed nothing of it) is not judged
    read = scenario("Please cancel order O-1.", ToolCall(tool="get_order", arguments={"order_id": "O-2"}), cancel("O-1"))
    assert unasked_changes(read, after("O-1")) == []


def test_a_record_a_checklist_item_is_about_is_the_validators_to_judge() -> None:
    other = ChecklistItem(id="c2", description="Has O-2 been cancelled too?", validator=ITEM.validator)
    sc = scenario("Please cancel order O-1.", cancel("O-1"), cancel("O-2"), items=(ITEM, other))
    assert unasked_changes(sc, after("O-1", "O-2")) == []
    in_code = ChecklistItem(id="c2", description="Are both cancelled?", validator=ITEM.validator.replace("O-1", "O-2"))
    assert unasked_changes(scenario("Please cancel order O-1.", cancel("O-1"), cancel("O-2"), items=(in_code,)),
                           after("O-1", "O-2")) == []


def test_a_record_the_task_implies_is_kept_unless_the_task_names_what_that_tool_is_for() -> None:
    # "Alice's orders": O-1 and O-3 hold her id, and the task names no order
    sc = scenario("Alice Moreau wants all her orders cancelled.", cancel("O-1"), cancel("O-3"))
    assert unasked_changes(sc, after("O-1", "O-3")) == []
    # the task names O-1 for cancel_order: her other order O-3, cancelled too, was not asked for
    named = scenario("Alice Moreau wants her order O-1 cancelled.", cancel("O-1"), cancel("O-3"))
    assert [p.split(",")[0] for p in unasked_changes(named, after("O-1", "O-3"))] == [
        "call 2 cancel_order changes orders O-3"]
    # Bruno's order is not Alice's: not implied
    bruno = scenario("Alice Moreau wants all her orders cancelled.", cancel("O-1"), cancel("O-2"))
    assert [p.split(",")[0] for p in unasked_changes(bruno, after("O-1", "O-2"))] == [
        "call 2 cancel_order changes orders O-2"]
    # O-2 holds the Chair the task names, but Bruno's id where the task names Alice: not implied either
    chair = scenario("Alice Moreau no longer wants the Chair.", cancel("O-3"), cancel("O-2"))
    assert [p.split(",")[0] for p in unasked_changes(chair, after("O-3", "O-2"))] == [
        "call 2 cancel_order changes orders O-2"]


def test_a_key_written_into_another_record_counts_as_acted_on() -> None:
    assign = ToolCall(tool="assign_order", arguments={"order_id": "O-1", "agent_id": "AG2"})
    final = after(orders={"O-1": {**STATE["orders"]["O-1"], "agent": "AG2"}})
    assert [p.split(",")[0] for p in unasked_changes(scenario("Give order O-1 to Dana.", assign), final)] == [
        "call 1 assign_order writes agents AG2 into orders['O-1'].agent"]
    assert unasked_changes(scenario("Give order O-1 to Ravi.", assign), final) == []
    assert unasked_changes(scenario("Give order O-1 to agent AG2.", assign), final) == []


def test_a_key_whose_records_the_replay_changed_counts_as_acted_on() -> None:
    assign = ToolCall(tool="assign_order", arguments={"order_id": "O-1", "agent_id": "AG1"})
    hand_over = ToolCall(tool="reassign_all", arguments={"from_agent_id": "AG2", "to_agent_id": "AG1"})
    final = after(orders={"O-1": {**STATE["orders"]["O-1"], "agent": "AG1"},
                          "O-3": {**STATE["orders"]["O-3"], "agent": "AG1"}})
    assert [p.split(",")[0] for p in unasked_changes(scenario("Give order O-1 to Dana.", assign, hand_over), final)] == [
        "call 2 reassign_all changes orders O-3"]
    assert unasked_changes(scenario("Give order O-1 and all of Ravi's orders to Dana.", assign, hand_over), final) == []


def test_a_record_a_named_one_points_at_is_implied() -> None:
    def replace(product: str) -> ToolCall:
        return ToolCall(tool="send_replacement", arguments={"product_id": product})

    def taken(product: str) -> dict[str, Any]:
        return after(products={product: {**STATE["products"][product], "stock": 0}})

    task = "Order O-1 arrived broken: send a replacement."
    assert unasked_changes(scenario(task, replace("P1")), taken("P1")) == []  # O-1 holds P1
    assert [p.split(",")[0] for p in unasked_changes(scenario(task, replace("P2")), taken("P2"))] == [
        "call 1 send_replacement changes products P2"]


def test_the_diff_a_caller_has_is_read_instead_of_worked_out_again() -> None:
    sc = scenario("Please cancel order O-1.", cancel("O-1"), cancel("O-2"))
    final = after("O-1", "O-2")
    changes = diff_states(STATE, final)
    assert consistency_problems(sc, final, changes) == consistency_problems(sc, final) != []
    # the diff given is what is read: without the change to O-2 in it, call 2 acts on nothing
    without_o2 = [c for c in changes if c.path[:2] != ["orders", "O-2"]]
    assert unasked_changes(sc, final, changes=without_o2) == []
