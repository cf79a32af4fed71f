"""The environment skeleton: everything needed to render one environment as an MCP server."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from envscaler_mcp._json import JSON, JSONObject, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION, SuccessConvention
from envscaler_mcp._usage import Usage

ToolKind = Literal["query", "state_change"]
# A package requirement: a distribution name and optional version clauses ('mpmath', 'mpmath>=1.3,<2'); no
# extras, markers or URLs (a rendered pyproject.toml and `pip install` receive it as it is)
_VERSION_CLAUSE = r"(==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!]+"
REQUIREMENT_PATTERN = rf"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?({_VERSION_CLAUSE}(,{_VERSION_CLAUSE})*)?$"


class Attribute(BaseModel):
    """One attribute of an entity."""

    name: str = Field(description="Attribute name as it appears in the state records.")
    type: str = Field("str", description="Python type annotation of the attribute, as text.")
    description: str = Field("", description="What the attribute means.")


class Entity(BaseModel):
    """A kind of record the environment keeps (an order, a patient, a ticket …)."""

    name: str = Field(description="Entity name, e.g. 'Order'.")
    attributes: list[Attribute] = Field(default_factory=list, description="The entity's attributes.")
    description: str = Field("", description="What the entity represents.")


class StateAttribute(BaseModel):
    """One top-level state attribute of the environment class (an instance attribute set in __init__)."""

    name: str = Field(description="Instance attribute name, e.g. 'orders'.")
    type: str = Field(description="Python annotation as text, e.g. 'Dict[str, OrderInfo]'.")
    json_schema: JSONObject = Field(
        default_factory=dict, description="JSON Schema of the attribute's value, derived from the annotation."
    )
    description: str = Field("", description="Comment or docstring describing the attribute.")


class ToolSpec(BaseModel):
    """One public method of the environment class, exposed as an MCP tool."""

    name: str = Field(description="Tool name; matches ^[a-zA-Z0-9_-]{1,64}$ and the method name.")
    description: str = Field(description="What the tool does (docstring summary, returns and constraints).")
    input_schema: JSONObject = Field(
        description="JSON Schema (2020-12) of the arguments: object root, properties with types, "
        "descriptions and defaults, required list, additionalProperties false."
    )
    kind: ToolKind = Field(description="'query' reads state only; 'state_change' may modify state.")

    def parameters(self) -> dict[str, JSONObject]:
        """The input schema's properties: parameter name -> its JSON Schema."""
        props = self.input_schema.get("properties")
        return {k: v for k, v in props.items() if isinstance(v, dict)} if isinstance(props, dict) else {}

    def required_parameters(self) -> set[str]:
        """Names the input schema requires."""
        required = self.input_schema.get("required")
        return {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()


class QualityCheck(BaseModel):
    """One tester call judged by the checker model."""

    tool: str = Field(description="Tool that was called.")
    arguments: JSONObject = Field(default_factory=dict, description="Arguments of the call.")
    case: Literal["positive", "negative"] = Field("positive", description="Whether the call was meant to succeed.")
    result: JSON = Field(None, description="The tool's result.")
    verdict: Literal["pass", "warning", "fail"] = Field(description="The checker's verdict.")
    reason: str = Field("", description="The checker's reason.")
    expected: Literal["success", "refusal"] | None = Field(
        None, description="What the checker said these arguments should get (None: not asked, older reports).")
    outcome: Literal["succeeded", "refused", "crashed"] | None = Field(
        None, description="What the call did: the method answered success, a refusal, or failed with an error.")


ProofStatus = Literal["works", "refused only", "crashes", "never succeeds", "dropped"]


class ToolProof(BaseModel):
    """Whether a tool was seen doing its job: a call that succeeded with its effect (a state change for a
    state-changing tool, a non-empty answer for a query) on a state holding records it can act on."""

    tool: str = Field(description="The tool.")
    status: ProofStatus = Field(
        description="works: a call succeeded with its effect; refused only: every call was refused, but no call "
        "built from the state's records could be made; crashes: a call failed with an error; never succeeds: "
        "calls built from every record it could act on were all refused (or succeeded with no effect); "
        "dropped: removed from the environment for one of these.")
    calls: int = Field(0, description="Calls made (record-built probes, the tester's calls, known calls).")
    succeeded: int = Field(0, description="Calls that succeeded with their effect.")
    refused: int = Field(0, description="Calls answered with a refusal (or a success without effect).")
    crashed: int = Field(0, description="Calls that failed with an error.")
    example: JSONObject | None = Field(
        None, description="Arguments of the call that shows the status (a success, the crash, a refusal).")
    detail: str = Field("", description="What that call answered, shortened.")


class QualityReport(BaseModel):
    """Outcome of the dual-agent quality check (or of the bundled catalog's own tests)."""

    method: str = Field(description="How quality was assessed, e.g. 'dual-agent' or 'hand-authored tests'.")
    passed: int = Field(0, description="Checks judged Pass.")
    warnings: int = Field(0, description="Checks judged Warning.")
    failed: int = Field(0, description="Checks judged Fail.")
    score: float | None = Field(None, description="(passed + warnings) / total, or None when nothing was checked.")
    threshold: float | None = Field(None, description="Score an environment needed to be kept.")
    repaired_tools: list[str] = Field(default_factory=list, description="Tools rewritten in the repair round.")
    checks: list[QualityCheck] = Field(default_factory=list, description="Every judged call.")
    tools: list[ToolProof] = Field(default_factory=list, description="Each tool's proven status (empty: not "
                                   "checked tool by tool, as in reports older than this field).")


class FreeField(BaseModel):
    """A state path whose value may differ from the reference solution's without failing the state check."""

    path: str = Field(
        description="Glob over state paths: keys separated by '.', '*' one key (or part of one: '*_at'), "
        "'[*]' any list index, '**' any number of levels; e.g. 'orders.*.cancel_reason', "
        "'tickets.*.comments[*].text'."
    )
    reason: str = Field(description="Why any value is acceptable: 'free text', 'generated timestamp' ...")


class Provenance(BaseModel):
    """How an artefact was made."""

    source: Literal["hand-authored", "envscaler-import", "synthesized", "bfcl-import"] = Field(
        description="Origin of the artefact ('bfcl-import': BFCL's multi-turn benchmark, `import bfcl`)."
    )
    source_id: str | None = Field(
        None, description="Identifier in the source (EnvScaler env_id or task_id, BFCL task id or classes)."
    )
    source_task: str | None = Field(None, description="The corpus task the environment was mined from.")
    models: dict[str, str] = Field(default_factory=dict, description="Model per seat, e.g. {'generator': 'openai/gpt-4.1'}.")
    prompt_version: str | None = Field(None, description="Version of the prompt templates used.")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost spent making it.")
    created_at: str | None = Field(None, description="ISO-8601 UTC time of creation.")
    notes: list[str] = Field(default_factory=list, description="Free-form notes (repairs, merges, warnings).")


class EnvSkeleton(BaseModel):
    """A stateful environment: one Python class whose attributes are the state and whose methods are the tools."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$",
                    description="Environment id: lowercase snake_case, also the server's directory name.")
    name: str = Field(description="Human-readable name.")
    summary: str = Field(description="One-line summary (EnvScaler's environment_summary).")
    introduction: str = Field(description="About three sentences introducing the environment.")
    entities: list[Entity] = Field(default_factory=list, description="Entities and attributes (the state space).")
    rules: list[str] = Field(default_factory=list, description="Business rules the code enforces.")
    class_name: str = Field(description="Name of the environment class in class_source.")
    class_source: str = Field(description="Full Python module source defining the environment class.")
    state: list[StateAttribute] = Field(default_factory=list, description="Top-level state attributes.")
    tools: list[ToolSpec] = Field(description="Public operations exposed as tools, in source order.")
    default_state: State = Field(
        default_factory=dict, description="A realistic initial state; keys are state attribute names."
    )
    free_fields: list[FreeField] = Field(
        default_factory=list,
        description="Fields the state check lets differ from the reference solution's final state (free text, "
        "generated timestamps): declared in meta.json for the catalog, inferred for imported and synthesized "
        "environments.",
    )
    success_convention: SuccessConvention = Field(
        DEFAULT_CONVENTION,
        exclude_if=lambda value: value == DEFAULT_CONVENTION,  # the default is left out: files stay as they were
        description="How a tool reports a failed call (envscaler_mcp/_outcome.py): 'envscaler' (a result "
        "without \"success\": true failed), 'error-field' (a 'success' field when present, else a non-empty "
        "'error' field) or 'no-error' (only a raised error).",
    )
    requirements: list[Annotated[str, StringConstraints(pattern=REQUIREMENT_PATTERN)]] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,  # none: left out, so files and content hashes stay as they were
        description="Python packages the environment code imports beyond the standard library, as requirements "
        "('mpmath>=1.3'): the rendered server's pyproject.toml depends on them, and launching it here needs "
        "them installed.",
    )
    provenance: Provenance = Field(description="How this skeleton was made.")
    quality: QualityReport | None = Field(None, description="Quality-check outcome, when one was run.")
    extra: JSONObject = Field(
        default_factory=dict,
        description="Fields from foreign formats kept for lossless round trips (e.g. EnvScaler's env_structure).",
    )

    def tool(self, name: str) -> ToolSpec:
        """Return the tool called `name` or raise KeyError."""
        for spec in self.tools:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def content_hash(self) -> str:
        """Stable sha256 of the skeleton's canonical JSON."""
        return canonical_hash(self.model_dump(mode="json"))


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the basis of every content hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_hash(value: Any) -> str:
    """sha256 hex digest of canonical_json(value)."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
