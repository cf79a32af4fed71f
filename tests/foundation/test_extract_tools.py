"""Tool extraction: which methods become tools, their descriptions, parameter docs and kinds."""

from __future__ import annotations

import pytest

from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.skeleton._docstrings import parse_docstring
from envscaler_mcp.skeleton.schema import env_structure, extract_tools

SHOP = '''
from typing import Dict, List, Optional, TypedDict

class Order(TypedDict):
    order_id: str
    status: str
    notes: List[str]

class Shop:
    def __init__(self):
        self.orders: Dict[str, Order] = {}
        self.audit: List[str] = []
        self.next_id: int = 1

    def get_order(self, order_id: str) -> dict:
        """Look up one order by id.

        Args:
            order_id (str): Id of the order,
                for example 'O-1'.

        Returns:
            dict: {"success": True, "data": Order}

        Constraints:
            - The order must exist.
        """
        order = self.orders.get(order_id)
        if order is None:
            return {"success": False, "error": "no such order"}
        return {"success": True, "data": order}

    def cancel_order(self, order_id: str) -> dict:
        """Cancel a pending order."""
        order = self.orders.get(order_id)
        if order is None or order["status"] != "pending":
            return {"success": False, "error": "only pending orders can be cancelled"}
        order["status"] = "cancelled"
        return {"success": True, "message": "cancelled"}

    def add_note(self, order_id: str, text: str) -> dict:
        """Add a note."""
        for oid, order in self.orders.items():
            if oid == order_id:
                order["notes"].append(text)
        return {"success": True, "message": "ok"}

    def log_event(self, text: str) -> dict:
        """Record an event through a helper."""
        self._record(text)
        return {"success": True, "message": "logged"}

    def bump(self) -> dict:
        """Increase the counter."""
        self.next_id += 1
        return {"success": True, "message": "ok"}

    def delete_all(self) -> dict:
        """Delete everything."""
        del self.orders["x"]
        return {"success": True, "message": "ok"}

    def count(self) -> dict:
        """Count orders, using a local list."""
        seen = []
        for order in sorted(self.orders):
            seen.append(order)
        return {"success": True, "data": len(seen)}

    def _record(self, text: str) -> None:
        self.audit.append(text)

    def _unused(self):
        return None

    @property
    def size(self) -> int:
        return len(self.orders)
'''


def test_only_public_methods_in_source_order() -> None:
    names = [t.name for t in extract_tools(SHOP, "Shop")]
    assert names == ["get_order", "cancel_order", "add_note", "log_event", "bump", "delete_all", "count"]


def test_kinds_follow_writes_through_aliases_helpers_augassign_and_del() -> None:
    kinds = {t.name: t.kind for t in extract_tools(SHOP, "Shop")}
    assert kinds == {
        "get_order": "query",
        "cancel_order": "state_change",
        "add_note": "state_change",
        "log_event": "state_change",
        "bump": "state_change",
        "delete_all": "state_change",
        "count": "query",
    }


def test_description_keeps_summary_returns_constraints_but_not_args() -> None:
    tool = extract_tools(SHOP, "Shop")[0]
    assert tool.description.startswith("Look up one order by id.")
    assert "Returns:" in tool.description and "Constraints:" in tool.description
    assert "Args:" not in tool.description and "for example" not in tool.description
    assert tool.input_schema["properties"]["order_id"]["description"] == "Id of the order, for example 'O-1'."


def test_method_without_docstring_gets_a_readable_description() -> None:
    src = "class E:\n    def reset_all(self) -> dict:\n        return {}\n"
    assert extract_tools(src, "E")[0].description == "reset all"


def test_bad_tool_name_is_rejected() -> None:
    src = "class E:\n    def " + "a" * 65 + "(self) -> dict:\n        return {}\n"
    with pytest.raises(EnvironmentCodeError, match="must match"):
        extract_tools(src, "E")


def test_google_docstring_with_types_multiline_and_blank_lines() -> None:
    doc = """Transfer money.

    Args:
        source (str): Account to debit.
        amount (float): How much,
            in euros.

        memo: Free text.

    Returns:
        dict: result
    """
    parsed = parse_docstring(doc)
    assert parsed.params == {
        "source": "Account to debit.",
        "amount": "How much, in euros.",
        "memo": "Free text.",
    }
    assert parsed.description == "Transfer money.\n\nReturns:\n    dict: result"


def test_sphinx_docstring() -> None:
    doc = """Transfer money.

    :param source: Account to debit.
    :param float amount: How much,
        in euros.
    :type amount: float
    :returns: the result
    """
    parsed = parse_docstring(doc)
    assert parsed.params == {"source": "Account to debit.", "amount": "How much, in euros."}
    assert parsed.description == "Transfer money.\n\n:returns: the result"


def test_empty_docstring() -> None:
    assert parse_docstring(None).description == "" and parse_docstring("").params == {}


def test_env_structure_shape() -> None:
    structure = env_structure(SHOP, "Shop")
    assert list(structure) == ["states", "methods"]
    assert structure["states"]["orders"]["type"] == "Dict[str, Order]"
    assert "cancel_order" in structure["states"]["orders"]["modified_by"]
    assert "get_order" in structure["states"]["orders"]["used_by"]
    assert structure["states"]["audit"]["modified_by"] == ["_record"]
    assert structure["methods"]["log_event"] == {"calls": ["_record"], "reads": [], "writes": []}
    assert structure["methods"]["get_order"] == {"calls": [], "reads": ["orders"], "writes": []}
    assert "__init__" not in structure["methods"] and "_unused" in structure["methods"]


def test_writes_through_a_record_returned_by_a_helper_count() -> None:
    src = '''
class Lib:
    def __init__(self):
        self.books = {}

    def _find(self, book_id: str):
        return self.books.get(book_id)

    def lend(self, book_id: str) -> dict:
        """Lend."""
        book = self._find(book_id)
        book["lent"] = True
        return {"success": True}

    def show(self, book_id: str) -> dict:
        """Show."""
        book = self._find(book_id)
        return {"success": True, "data": dict(book)}
'''
    assert {t.name: t.kind for t in extract_tools(src, "Lib")} == {"lend": "state_change", "show": "query"}
    assert env_structure(src, "Lib")["methods"]["lend"]["writes"] == ["books"]


def test_a_redefined_method_counts_once_with_its_last_definition() -> None:
    src = (
        "class E:\n    def a(self) -> dict:\n        return {}\n\n    def b(self) -> dict:\n        return {}\n\n"
        "    def a(self, x: int) -> dict:\n        return {}\n"
    )
    tools = extract_tools(src, "E")
    assert [t.name for t in tools] == ["a", "b"]
    assert list(tools[0].input_schema["properties"]) == ["x"]


def test_every_derived_schema_is_a_valid_2020_12_schema() -> None:
    import jsonschema

    from envscaler_mcp.skeleton.schema import extract_state, state_schema

    for tool in extract_tools(SHOP, "Shop"):
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    jsonschema.Draft202012Validator.check_schema(state_schema(extract_state(SHOP, "Shop")))


ALIASES = '''
class Env:
    def __init__(self):
        self.slots = {}
        self.queue = []

    def block_day(self, day: str) -> dict:
        """Write records picked by a comprehension."""
        day_slots = [s for s in self.slots.values() if s["date"] == day]
        for slot in day_slots:
            slot["status"] = "blocked"
        return {"success": True}

    def first_slot(self) -> dict:
        """Write the first of a sorted list."""
        ordered = sorted(self.slots.values(), key=lambda s: s["date"])
        ordered[0]["status"] = "held"
        return {"success": True}

    def list_sorted(self) -> dict:
        """Sort and extend a fresh list of records: no write."""
        items = [s for s in self.slots.values()]
        items.sort(key=lambda s: s["date"])
        items.append({"x": 1})
        copies = [dict(s) for s in self.slots.values()]
        copies[0]["status"] = "x"
        return {"success": True, "data": items}

    def list_copy(self) -> dict:
        """Change a shallow copy: no write."""
        view = self.queue.copy()
        view.reverse()
        return {"success": True, "data": view}

    def newest(self) -> dict:
        """Write through max()."""
        newest = max(self.slots.values(), key=lambda s: s["date"])
        newest["seen"] = True
        return {"success": True}

    def rotate(self) -> dict:
        """Sort the state list itself."""
        self.queue.sort()
        return {"success": True}

    def grow(self) -> dict:
        """Extend a state list through an alias with +=."""
        q = self.queue
        q += [1]
        return {"success": True}

    def nested(self) -> dict:
        """Alias of an alias, assigned after its use in the loop body."""
        for _ in range(2):
            if _:
                last["n"] = 1
            last = target
            target = self.slots.get("a")
        return {"success": True}
'''


def test_kinds_through_comprehensions_sorted_copies_and_late_aliases() -> None:
    kinds = {t.name: t.kind for t in extract_tools(ALIASES, "Env")}
    assert kinds == {
        "block_day": "state_change",
        "first_slot": "state_change",
        "list_sorted": "query",
        "list_copy": "query",
        "newest": "state_change",
        "rotate": "state_change",
        "grow": "state_change",
        "nested": "state_change",
    }


def test_numpy_docstring() -> None:
    doc = """Transfer money.

    Parameters
    ----------
    source : str
        Account to debit.
    amount : float
        How much,
        in euros.

    Returns
    -------
    dict
        The result.
    """
    parsed = parse_docstring(doc)
    assert parsed.params == {"source": "Account to debit.", "amount": "How much, in euros."}
    assert parsed.description == "Transfer money.\n\nReturns\n-------\ndict\n    The result."


def test_envscaler_style_docstring() -> None:
    doc = """
        Retrieve device info by device_id.

        Args:
            device_id (str): Unique identifier of the device.
            status (Optional[str], optional): Filter. Defaults to None.

        Returns:
            dict: {
                "success": True,
                "data": DeviceInfo
            }

        Constraints:
            - device_id must exist.
        """
    parsed = parse_docstring(doc)
    assert parsed.params == {
        "device_id": "Unique identifier of the device.",
        "status": "Filter. Defaults to None.",
    }
    assert parsed.description.startswith("Retrieve device info by device_id.\n\nReturns:\n    dict: {")
    assert parsed.description.endswith("Constraints:\n    - device_id must exist.")


HELPERS = '''
def _set_status(orders, order_id, status):
    orders[order_id]["status"] = status


def _append_note(notes: list, text: str) -> None:
    notes.append(text)


def _via(container, order_id):  # changes its argument through another helper
    _set_status(container, order_id, "held")


def _lookup(orders, order_id):  # reads only
    return orders.get(order_id)


def _record(log, *, entry):
    log.append(entry)


class Shop:
    def __init__(self):
        self.orders = {}
        self.notes = []
        self.log = []

    def _close(self, order):
        order["status"] = "closed"

    def cancel(self, order_id: str) -> dict:
        """Cancel."""
        _set_status(self.orders, order_id, "cancelled")
        return {"success": True}

    def note(self, text: str) -> dict:
        """Note."""
        _append_note(self.notes, text)
        return {"success": True}

    def hold(self, order_id: str) -> dict:
        """Hold."""
        _via(self.orders, order_id)
        return {"success": True}

    def close(self, order_id: str) -> dict:
        """Close through a method that changes the record it is given."""
        self._close(self.orders[order_id])
        return {"success": True}

    def audit(self, entry: str) -> dict:
        """Audit (keyword argument)."""
        _record(self.log, entry=entry)
        return {"success": True}

    def find(self, order_id: str) -> dict:
        """Find."""
        return {"success": True, "data": _lookup(self.orders, order_id)}

    def status_of(self, order_id: str) -> dict:
        """A fresh list handed to a changing helper writes no state."""
        scratch = [o for o in self.orders]
        _append_note(scratch, order_id)
        return {"success": True}
'''


def test_writes_through_state_passed_to_module_level_helpers_are_state_changes() -> None:
    kinds = {t.name: t.kind for t in extract_tools(HELPERS, "Shop")}
    assert kinds == {
        "cancel": "state_change",
        "note": "state_change",
        "hold": "state_change",
        "close": "state_change",
        "audit": "state_change",
        "find": "query",
        "status_of": "query",
    }
    methods = env_structure(HELPERS, "Shop")["methods"]
    assert methods["cancel"]["writes"] == ["orders"]
    assert methods["note"]["writes"] == ["notes"]
    assert methods["audit"]["writes"] == ["log"]
    assert methods["close"]["writes"] == ["orders"]
    assert methods["find"]["writes"] == []
    assert all(not w.startswith("<") for fx in methods.values() for w in fx["writes"])
