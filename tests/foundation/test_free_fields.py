"""Free fields of skeletons: declared in the catalog's meta.json, inferred for other environments."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids
from envscaler_mcp.compare.freefields import matches, parse_pattern
from envscaler_mcp.skeleton.build import EnvMeta, build_skeleton
from envscaler_mcp.skeleton.free_fields import field_reason, infer_free_fields
from envscaler_mcp.skeleton.models import StateAttribute

SOURCE = '''
from typing import Dict, List, Optional, TypedDict

class TicketInfo(TypedDict):
    ticket_id: str
    title: str
    status: str
    cancel_reason: Optional[str]
    comments: List[str]
    created_at: str
    priority_note_count: int

class Desk:
    def __init__(self):
        self.tickets: Dict[str, TicketInfo] = {}
        self.last_message: str = ""

    def get_ticket(self, ticket_id: str) -> dict:
        """Look a ticket up.

        Args:
            ticket_id: The ticket id.

        Returns:
            {"success": True, "data": dict}.
        """
        return {"success": True, "data": self.tickets.get(ticket_id)}
'''


def _meta(**extra: Any) -> EnvMeta:
    return EnvMeta(id="desk", name="Desk", summary="s", introduction="i", class_name="Desk", **extra)


def test_the_heuristic_frees_free_text_and_timestamps_by_name_and_type() -> None:
    skeleton = build_skeleton(_meta(), SOURCE, {"tickets": {}, "last_message": ""})
    assert [(f.path, f.reason) for f in skeleton.free_fields] == [
        ("tickets.*.cancel_reason", "free text"),
        ("tickets.*.comments", "free text"),
        ("tickets.*.created_at", "generated timestamp"),
        ("last_message", "free text"),
    ]
    assert field_reason("priority_note_count", {"type": "integer"}) is None  # a count, not text
    assert field_reason("reason", {"type": "object"}) is None


def test_declared_free_fields_replace_the_heuristic() -> None:
    declared = _meta(free_fields=[{"path": "tickets.*.title", "reason": "free text"}])
    skeleton = build_skeleton(declared, SOURCE, {"tickets": {}, "last_message": ""})
    assert [f.path for f in skeleton.free_fields] == ["tickets.*.title"]
    nothing = build_skeleton(_meta(free_fields=[]), SOURCE, {"tickets": {}, "last_message": ""})
    assert nothing.free_fields == []


def _schema_paths(schema: dict[str, Any], path: list[Any], out: list[list[Any]]) -> list[list[Any]]:
    out.append(path)
    for name, sub in (schema.get("properties") or {}).items():
        _schema_paths(sub, [*path, name], out)
    if isinstance(schema.get("additionalProperties"), dict):
        _schema_paths(schema["additionalProperties"], [*path, "KEY"], out)
    if isinstance(schema.get("items"), dict):
        _schema_paths(schema["items"], [*path, 0], out)
    return out


@pytest.mark.parametrize("env_id", list_env_ids())
def test_every_declared_free_field_of_the_catalog_names_a_field_of_its_state(env_id: str) -> None:
    skeleton = get_skeleton(env_id)
    paths = [p for attr in skeleton.state for p in _schema_paths(attr.json_schema, [attr.name], [])]
    for field in skeleton.free_fields:
        assert field.reason
        assert any(matches(parse_pattern(field.path), p) and len(p) == len(parse_pattern(field.path))
                   for p in paths), f"{env_id}: {field.path} matches no field of the state"


def test_the_catalog_declares_what_the_heuristic_finds_except_enums() -> None:
    """The heuristic is a fair default: on the catalog it finds the declared text fields and one enum."""
    inferred = {env: {f.path for f in infer_free_fields(get_skeleton(env).state)} for env in list_env_ids()}
    declared = {env: {f.path for f in get_skeleton(env).free_fields} for env in list_env_ids()}
    assert inferred["library_loans"] - declared["library_loans"] == {"fines.*.reason"}  # 'overdue' / 'lost'
    assert declared["it_helpdesk"] - inferred["it_helpdesk"] == {"tickets.*.title"}
    for env in set(inferred) - {"library_loans", "it_helpdesk"}:
        assert inferred[env] == declared[env], env


def test_state_attributes_of_any_shape() -> None:
    state = [StateAttribute(name="log", type="List[Dict[str, str]]",
                            json_schema={"type": "array", "items": {"type": "object", "properties": {
                                "message": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                                "level": {"type": "string"}}}})]
    assert [f.path for f in infer_free_fields(state)] == ["log[*].message"]
