"""Structured answers of the model stage, one small call each: the entities and rules, one entity's
attributes, the planned operations.

Each answer is a Pydantic model whose JSON schema is sent as the call's structured-output constraint
(`GenerationSettings.json_schema`); the bounds in the schema (items, string lengths, name patterns) keep a
small model from repeating itself until the token cap. A provider that cannot constrain its output gets the
same schema in words; its answer goes through the tolerant reader (`extract_json`: a fenced block or the
first balanced JSON value) and the same validation, whose error is fed back for a repair round.

The class skeleton is not asked for: it is written from the validated entities (`class_source`).
"""

from __future__ import annotations

import keyword
import re
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._json import JSONObject
from envscaler_mcp.skeleton.models import Attribute, Entity
from envscaler_mcp.synth._common_parse import AnswerFormatError, extract_json
from envscaler_mcp.synth.skel.records import Operation

SNAKE = r"^[a-z][a-z0-9_]{0,40}$"
CAMEL = r"^[A-Z][A-Za-z0-9]{0,40}$"
AttributeType = Literal["str", "int", "float", "bool", "List[str]", "Dict[str, str]"]

M = TypeVar("M", bound=BaseModel)


class EntityName(BaseModel):
    """An entity as first named (its attributes come in a call of their own)."""

    name: str = Field(pattern=CAMEL, description="CamelCase entity name, e.g. 'Order'.")
    description: str = Field(max_length=160, description="What one record of it represents.")


class EntitiesAnswer(BaseModel):
    """skel/entities: the class name, the entities and the business rules."""

    class_name: str = Field(pattern=CAMEL, description="CamelCase name of the environment class.")
    entities: list[EntityName] = Field(min_length=1, max_length=4)
    rules: list[Annotated[str, Field(max_length=200)]] = Field(max_length=8, description="One rule each.")


class AttributeAnswer(BaseModel):
    """One attribute of an entity."""

    name: str = Field(pattern=SNAKE, description="snake_case attribute name.")
    type: AttributeType = Field(description="Python type of the attribute.")
    description: str = Field(max_length=120)


class AttributesAnswer(BaseModel):
    """skel/attributes: the attributes of one entity, its identifier first."""

    attributes: list[AttributeAnswer] = Field(min_length=2, max_length=7)


class PlannedOperation(BaseModel):
    """One operation as planned."""

    name: str = Field(pattern=SNAKE, description="Public snake_case method name.")
    description: str = Field(max_length=200, description="What it does, its inputs and output.")


class OperationsPlan(BaseModel):
    """skel/operations: queries first, then state changes."""

    queries: list[PlannedOperation] = Field(min_length=1, max_length=4)
    state_changes: list[PlannedOperation] = Field(min_length=1, max_length=3)


def answer_schema(model: type[BaseModel]) -> JSONObject:
    """The JSON schema sent as the structured-output constraint of `model`'s step."""
    schema: JSONObject = model.model_json_schema()
    return schema


def read_answer(text: str, model: type[M]) -> M:
    """The answer as `model`: strict JSON first (constrained output), else the tolerant reader (a fenced block or
    the first balanced JSON value). Validation errors become an AnswerFormatError the model can act on."""
    data = extract_json(text, expect=dict, what=f"JSON object ({', '.join(model.model_fields)})")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}"
                             for e in exc.errors()[:5])
        raise AnswerFormatError(f"the JSON does not match the required form: {problems}") from exc


def accept_entities(text: str) -> EntitiesAnswer:
    """skel/entities, with unique entity names."""
    answer = read_answer(text, EntitiesAnswer)
    names = [e.name for e in answer.entities]
    if len(set(names)) != len(names):
        raise AnswerFormatError("every entity name must be unique")
    if answer.class_name in names:
        raise AnswerFormatError(f"the class name {answer.class_name!r} must differ from the entity names")
    return answer.model_copy(update={"rules": [r.strip() for r in answer.rules if r.strip()]})


def accept_attributes(text: str) -> list[Attribute]:
    """skel/attributes: unique names, not Python keywords, an identifier attribute (ending in 'id') first."""
    answer = read_answer(text, AttributesAnswer)
    names = [a.name for a in answer.attributes]
    if len(set(names)) != len(names):
        raise AnswerFormatError("every attribute name must be unique")
    bad = [n for n in names if keyword.iskeyword(n)]
    if bad:
        raise AnswerFormatError(f"attribute names must not be Python keywords: {', '.join(bad)}")
    if not names[0].endswith("id") or answer.attributes[0].type != "str":
        raise AnswerFormatError(f"the first attribute must be the identifier, a str named like '<entity>_id' "
                                f"(got {names[0]!r} of type {answer.attributes[0].type})")
    return [Attribute(name=a.name, type=a.type, description=a.description) for a in answer.attributes]


def accept_operations(text: str) -> list[Operation]:
    """skel/operations: unique names across both groups, none a keyword or a private name."""
    plan = read_answer(text, OperationsPlan)
    ops = [Operation(name=o.name, description=o.description, kind="query") for o in plan.queries] + [
        Operation(name=o.name, description=o.description, kind="state_change") for o in plan.state_changes]
    seen: set[str] = set()
    for op in ops:
        if keyword.iskeyword(op.name):
            raise AnswerFormatError(f"operation name {op.name!r} is a Python keyword")
        if op.name in seen:
            raise AnswerFormatError(f"operation {op.name!r} is listed twice; every name must be unique")
        seen.add(op.name)
    return ops


def snake(name: str) -> str:
    """CamelCase -> snake_case."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def container_name(entity: str) -> str:
    """The state attribute holding an entity's records: 'Order' -> 'orders', 'Category' -> 'categories'."""
    base = snake(entity)
    if re.search(r"[^aeiou]y$", base):
        return base[:-1] + "ies"
    return base + ("es" if re.search(r"(s|x|z|ch|sh)$", base) else "s")


def class_source(class_name: str, entities: list[Entity], rules: list[str]) -> str:
    """The class skeleton written from the design: one TypedDict per entity and a class whose __init__ creates
    one empty dict per entity, keyed by its identifier (the first attribute)."""
    lines = ["from typing import Dict, List, TypedDict", ""]
    for entity in entities:
        lines += ["", f"class {entity.name}Info(TypedDict):"]
        lines += [f"    {a.name}: {a.type}" for a in entity.attributes]
        lines.append("")
    lines += ["", f"class {class_name}:", "    def __init__(self) -> None:"]
    lines += [f"        # rule: {' '.join(r.split())}" for r in rules]
    for entity in entities:
        key = entity.attributes[0].name
        desc = " ".join(entity.description.split())
        lines.append(f"        # {entity.name} records by {key}" + (f": {desc}" if desc else ""))
        lines.append(f"        self.{container_name(entity.name)}: Dict[str, {entity.name}Info] = {{}}")
    return "\n".join(lines) + "\n"
