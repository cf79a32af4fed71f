"""Fixture: a tiny hand-built environment (skeleton + scenarios) for render/launch/conformance tests.

It is written by hand so these tests do not depend on the bundled catalog. Besides ordinary tools it
has tools that misbehave on purpose (raise after a change, loop forever, fail after a change) to test
the server's error handling and rollback.
"""

from __future__ import annotations

from typing import Any

from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton, Provenance, StateAttribute, ToolSpec

CLASS_SOURCE = '''"""Fixture environment: a small shop."""
from typing import Any, Dict, List, TypedDict


class ItemInfo(TypedDict):
    item_id: str
    name: str
    price: float
    stock: int


class FixtureShop:
    def __init__(self, init_config=None):
        self.items: Dict[str, ItemInfo] = {}
        self.orders: Dict[str, dict] = {}
        self.log: List[str] = []
        self.counter: int = 0

    def get_item(self, item_id: str) -> dict:
        """Get one item.

        Args:
            item_id: The item id.
        Returns:
            dict: the item.
        """
        if item_id not in self.items:
            return {"success": False, "error": f"no item {item_id}"}
        return {"success": True, "data": self.items[item_id]}

    def list_items(self) -> dict:
        """List all items.

        Returns:
            dict: the items.
        """
        return {"success": True, "data": list(self.items.values())}

    def add_item(self, item_id: str, name: str, price: float, stock: int = 0) -> dict:
        """Add an item.

        Args:
            item_id: New item id.
            name: Item name.
            price: Unit price.
            stock: Units in stock.
        Returns:
            dict: success message.
        """
        if item_id in self.items:
            return {"success": False, "error": f"item {item_id} exists"}
        record = {"item_id": item_id, "name": name}
        self.items[item_id] = record
        record["price"] = price
        record["stock"] = stock
        self.log.append(f"add {item_id}")
        return {"success": True, "message": f"added {item_id}"}

    def place_order(self, item_id: str, quantity: int) -> dict:
        """Order units of an item; fails (after touching the state) when stock is short.

        Args:
            item_id: Item to order.
            quantity: Units.
        Returns:
            dict: the order id.
        """
        item = self.items.get(item_id)
        if item is None:
            return {"success": False, "error": f"no item {item_id}"}
        self.counter += 1
        order_id = f"o{self.counter}"
        self.orders[order_id] = {"item_id": item_id, "quantity": quantity, "lines": [item_id]}
        item["stock"] -= quantity
        self.log.append(f"order {order_id}")
        if item["stock"] < 0:
            return {"success": False, "error": "not enough stock"}
        return {"success": True, "message": "ordered", "data": {"order_id": order_id}}

    def remove_item(self, item_id: str) -> dict:
        """Remove an item.

        Args:
            item_id: Item to remove.
        Returns:
            dict: success message.
        """
        if item_id not in self.items:
            return {"success": False, "error": f"no item {item_id}"}
        del self.items[item_id]
        self.log.append(f"remove {item_id}")
        return {"success": True, "message": f"removed {item_id}"}

    def break_things(self, mode: str) -> dict:
        """Change the state, then misbehave.

        Args:
            mode: 'raise' raises, 'loop' never returns, 'rebind' replaces a state attribute then raises.
        Returns:
            dict: never returns normally.
        """
        self.log.append("broken")
        self.items.clear()
        if mode == "rebind":
            self.items = {"x": {"item_id": "x"}}
            self.counter = 99
        if mode == "loop":
            n = 0
            while True:
                n += 1
        raise ValueError(f"broken on purpose ({mode})")
'''


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_S = {"type": "string"}
TOOLS = [
    ToolSpec(name="get_item", kind="query", description="Get one item.",
             input_schema=_schema({"item_id": {**_S, "description": "The item id."}}, ["item_id"])),
    ToolSpec(name="list_items", kind="query", description="List all items.", input_schema=_schema({}, [])),
    ToolSpec(name="add_item", kind="state_change", description="Add an item.",
             input_schema=_schema({"item_id": _S, "name": _S, "price": {"type": "number"},
                                   "stock": {"type": "integer", "default": 0}}, ["item_id", "name", "price"])),
    ToolSpec(name="place_order", kind="state_change", description="Order units of an item.",
             input_schema=_schema({"item_id": _S, "quantity": {"type": "integer", "minimum": 1}},
                                  ["item_id", "quantity"])),
    ToolSpec(name="remove_item", kind="state_change", description="Remove an item.",
             input_schema=_schema({"item_id": _S}, ["item_id"])),
    ToolSpec(name="break_things", kind="state_change", description="Change the state, then misbehave.",
             input_schema=_schema({"mode": {"type": "string", "enum": ["raise", "loop", "rebind"]}}, ["mode"])),
]

DEFAULT_STATE: dict[str, Any] = {
    "items": {
        "i1": {"item_id": "i1", "name": "Kettle", "price": 25.0, "stock": 4},
        "i2": {"item_id": "i2", "name": "Teapot", "price": 18.5, "stock": 1},
        "i3": {"item_id": "i3", "name": "Mug", "price": 6.0, "stock": 30},
    },
    "orders": {},
    "log": [],
    "counter": 0,
}


def skeleton() -> EnvSkeleton:
    """The fixture skeleton."""
    return EnvSkeleton(
        id="fixture_shop", name="Fixture Shop", summary="A tiny shop used by the tests.",
        introduction="Items with prices and stock; orders reduce stock.", rules=["Stock never goes negative."],
        class_name="FixtureShop", class_source=CLASS_SOURCE,
        state=[StateAttribute(name="items", type="Dict[str, ItemInfo]"),
               StateAttribute(name="orders", type="Dict[str, dict]"),
               StateAttribute(name="log", type="List[str]"),
               StateAttribute(name="counter", type="int")],
        tools=TOOLS, default_state=DEFAULT_STATE, provenance=Provenance(source="hand-authored"))


def scenarios() -> list[Scenario]:
    """Two fixture scenarios with reference solutions."""
    s1 = Scenario(env_id="fixture_shop", title="Order two mugs", task="Order 2 mugs (item i3) and add item i4.",
                  initial_state=DEFAULT_STATE,
                  checklist=[ChecklistItem(id="c1", description="Has an order?",
                                           validator="def check_func(final_state):\n    return bool(final_state['orders'])\n")],
                  reference_solution=[ToolCall(tool="place_order", arguments={"item_id": "i3", "quantity": 2}),
                                      ToolCall(tool="add_item", arguments={"item_id": "i4", "name": "Spoon",
                                                                           "price": 1.5, "stock": 10})],
                  provenance=Provenance(source="hand-authored")).with_id()
    state2 = {**DEFAULT_STATE, "items": {"i9": {"item_id": "i9", "name": "Pan", "price": 40.0, "stock": 2}}}
    s2 = Scenario(env_id="fixture_shop", title="Remove the pan", task="Remove item i9 after ordering one.",
                  initial_state=state2,
                  checklist=[ChecklistItem(id="c1", description="Has no pan?",
                                           validator="def check_func(final_state):\n    return 'i9' not in final_state['items']\n")],
                  reference_solution=[ToolCall(tool="place_order", arguments={"item_id": "i9", "quantity": 1}),
                                      ToolCall(tool="remove_item", arguments={"item_id": "i9"})],
                  provenance=Provenance(source="hand-authored")).with_id()
    return [s1, s2]
