"""The JSON values that cross stages, named: `JSON`, `JSONObject`, and an environment's `State`.

For the type checker `JSON` is the recursive union of what `json.loads` returns, so code that walks a
state or a tool's arguments has to narrow (`isinstance`) before it indexes. At run time the aliases are
`Any`: pydantic models that hold states (a scenario's initial state, a skeleton's default state) neither
validate nor copy them on construction, exactly as before the aliases existed; their content is checked
where it enters (JSON files, the server's admin plane, the skeleton's state checks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
    """A JSON value."""
else:
    JSON = Any

JSONObject: TypeAlias = dict[str, JSON]
"""A JSON object: tool arguments, a structured tool result, a record of a state."""

State: TypeAlias = dict[str, JSON]
"""An environment's state: public attribute name -> JSON value (see docs/architecture.md)."""

__all__ = ["JSON", "JSONObject", "State"]
