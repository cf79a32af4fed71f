"""The structured steps of the model stage: schemas sent as constraints, strict and tolerant reading, checks."""

from __future__ import annotations

import json

import pytest

from envscaler_mcp.skeleton.models import Attribute, Entity
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.skel.codecheck import accept_skeleton
from envscaler_mcp.synth.skel.structured import (
    EntitiesAnswer,
    OperationsPlan,
    accept_attributes,
    accept_entities,
    accept_operations,
    answer_schema,
    class_source,
    container_name,
)

from ..fixtures.skel_router import ANSWERS


def test_schemas_bound_what_a_small_model_may_write():
    schema = answer_schema(EntitiesAnswer)
    entities = schema["properties"]["entities"]
    assert entities["maxItems"] == 4 and entities["minItems"] == 1
    assert schema["properties"]["rules"]["items"]["maxLength"] == 200
    assert schema["properties"]["class_name"]["pattern"].startswith("^[A-Z]")
    plan = answer_schema(OperationsPlan)
    op = plan["$defs"]["PlannedOperation"]["properties"]
    assert op["name"]["pattern"].startswith("^[a-z]") and op["description"]["maxLength"] == 200


def test_entities_strict_and_tolerant():
    strict = accept_entities((ANSWERS / "library/entities.md").read_text())
    assert strict.class_name == "LibraryLoanSystem" and [e.name for e in strict.entities] == ["Book", "Member", "Loan"]
    wrapped = "Here is the design:\n```json\n" + (ANSWERS / "library/entities.md").read_text() + "```\nDone."
    assert accept_entities(wrapped) == strict  # a provider without constrained output: the tolerant reader
    with pytest.raises(AnswerFormatError, match="no JSON"):
        accept_entities((ANSWERS / "library/entities.0.md").read_text())
    bad = {"class_name": "shop", "entities": [{"name": "Order", "description": "x"}] * 5, "rules": []}
    with pytest.raises(AnswerFormatError, match=r"class_name.*pattern|entities.*at most 4"):
        accept_entities(json.dumps(bad))
    twice = {"class_name": "Shop", "entities": [{"name": "Order", "description": "x"}] * 2, "rules": []}
    with pytest.raises(AnswerFormatError, match="unique"):
        accept_entities(json.dumps(twice))
    clash = {"class_name": "Order", "entities": [{"name": "Order", "description": "x"}], "rules": []}
    with pytest.raises(AnswerFormatError, match="differ"):
        accept_entities(json.dumps(clash))


def test_attributes_need_the_identifier_first():
    attrs = accept_attributes((ANSWERS / "library/attributes_Loan.md").read_text())
    assert [a.name for a in attrs] == ["loan_id", "book_id", "member_id", "status"]
    def answer(*items: tuple[str, str]) -> str:
        return json.dumps({"attributes": [{"name": n, "type": t, "description": ""} for n, t in items]})
    with pytest.raises(AnswerFormatError, match="identifier"):
        accept_attributes(answer(("title", "str"), ("book_id", "str")))
    with pytest.raises(AnswerFormatError, match="identifier"):
        accept_attributes(answer(("book_id", "int"), ("title", "str")))
    with pytest.raises(AnswerFormatError, match="keywords"):
        accept_attributes(answer(("book_id", "str"), ("class", "str")))
    with pytest.raises(AnswerFormatError, match="unique"):
        accept_attributes(answer(("book_id", "str"), ("book_id", "str")))
    with pytest.raises(AnswerFormatError, match="type"):
        accept_attributes(answer(("book_id", "str"), ("when", "datetime")))


def test_operations_plan():
    ops = accept_operations((ANSWERS / "library/operations.md").read_text())
    assert [(o.name, o.kind) for o in ops] == [("get_book", "query"), ("list_member_loans", "query"),
                                               ("checkout_book", "state_change"), ("return_book", "state_change")]
    with pytest.raises(AnswerFormatError, match="twice"):
        accept_operations(json.dumps({"queries": [{"name": "a_b", "description": "x"}],
                                      "state_changes": [{"name": "a_b", "description": "y"}]}))
    with pytest.raises(AnswerFormatError, match="pattern"):
        accept_operations(json.dumps({"queries": [{"name": "GetX", "description": "x"}],
                                      "state_changes": [{"name": "set_x", "description": "y"}]}))
    with pytest.raises(AnswerFormatError, match="state_changes"):
        accept_operations(json.dumps({"queries": [{"name": "get_x", "description": "x"}], "state_changes": []}))


def test_class_source_is_written_from_the_design_and_passes_the_skeleton_checks():
    entities = [Entity(name="Category", attributes=[Attribute(name="category_id"), Attribute(name="tags", type="List[str]")]),
                Entity(name="Box", description="a box", attributes=[Attribute(name="box_id")])]
    source = class_source("Store", entities, ["a box needs a category"])
    state = accept_skeleton(source, "Store")
    assert [(a.name, a.type) for a in state] == [("categories", "Dict[str, CategoryInfo]"), ("boxes", "Dict[str, BoxInfo]")]
    assert "# rule: a box needs a category" in source
    assert [container_name(n) for n in ("Order", "Key", "Address", "OrderItem")] == ["orders", "keys", "addresses",
                                                                                     "order_items"]
