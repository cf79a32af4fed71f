"""What the state step asks for: how many records per collection, and its prompt's ladder (richest first)."""

from __future__ import annotations

import json

from envscaler_mcp._json import State
from envscaler_mcp.qa.grounding import keyed_collections
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.skeleton.schema import state_schema
from envscaler_mcp.synth._common_fit import estimate_text
from envscaler_mcp.synth.scen.excerpt import outline, state_view
from envscaler_mcp.synth.skel.quality import dump_state


def records_per_entity(example: State, answer_tokens: int | None) -> str:
    """How many records per entity the state step asks for: 4-8, or fewer where the answer room is known and
    that many records of every collection (at the example state's record sizes) would not fit in 80 % of it:
    clinic_appointments' first state answer (7 collections) stopped at its 4,096 tokens after 31 minutes."""
    collections = [records for name in keyed_collections(example) if isinstance(records := example[name], dict)]
    sizes = [sum(estimate_text(json.dumps({key: record}, indent=1)) for key, record in records.items()) / len(records)
             for records in collections]
    if answer_tokens is None or not sizes:
        return "4-8"
    most = max(2, min(8, int(0.8 * answer_tokens / sum(sizes))))
    return "4-8" if most == 8 else f"{min(4, most // 2 + 1) if most > 2 else 1}-{most}"


def state_step_ladder(skeleton: EnvSkeleton, only: list[str] | None = None) -> list[dict[str, str]]:
    """What the state step shows, richest first: the code, its outline, none; an example state (its first 4,000
    characters), then two, then one record per collection; the state schema indented, then compact. `only`
    keeps the example and the schema to those attributes (a follow-up asking for the attributes missing)."""
    schema = state_schema(skeleton)["properties"]
    default = skeleton.default_state or {}
    if only is not None:
        schema = {k: v for k, v in schema.items() if k in only}
        default = {k: v for k, v in default.items() if k in only}
    code = [skeleton.class_source, outline(skeleton.class_source), ""]
    examples = [dump_state(default, limit=4000) if default else ""]
    examples += [state_view(default, n) if default else "" for n in (2, 1)]
    schemas = [json.dumps(schema, indent=1), json.dumps(schema, separators=(",", ":"))]
    rungs = [(code[0], examples[0], schemas[0]), (code[1], examples[0], schemas[0]), (code[1], examples[1], schemas[1]),
             (code[2], examples[1], schemas[1]), (code[2], examples[2], schemas[1]), (code[2], "", schemas[1])]
    return [{"class_source": c, "example": e, "state_schema": s} for c, e, s in rungs]


def record_bounds(records: str) -> tuple[int, int]:
    """The fewest and the most records per collection a state prompt asks for ("3-4" -> (3, 4))."""
    low, _, high = records.partition("-")
    return int(low), int(high or low)
