"""The one interface every LLM seat goes through: messages + tools + settings in, an assistant turn out."""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator, model_validator

from envscaler_mcp._json import JSONObject, valid_text
from envscaler_mcp._usage import Usage
from envscaler_mcp.providers.arguments import bounded_call

Role = Literal["system", "user", "assistant", "tool"]


class ToolCallRequest(BaseModel):
    """A tool call the model asked for."""

    id: str = Field(description="Call id (the provider's, or generated when the provider gives none).")
    name: str = Field(description="Tool name, already mapped back to the MCP name.")
    arguments: JSONObject = Field(default_factory=dict, description="Decoded arguments.")
    raw_arguments: str | None = Field(
        None, description="The undecoded argument text when it was not a JSON object (arguments is then {})."
    )
    rejected: str | None = Field(
        None, description="Why the arguments were not sent to the tool (nested too deep, too large); arguments "
        "is then {} and the call an error result (providers/arguments.py)."
    )

    _bounded = model_validator(mode="before")(bounded_call)
    _valid_text = field_validator("name", "arguments", "raw_arguments")(valid_text)


class Message(BaseModel):
    """A provider-neutral chat message."""

    role: Role
    content: str = Field("", description="Text content.")
    tool_calls: list[ToolCallRequest] = Field(default_factory=list, description="Assistant tool calls.")
    tool_call_id: str | None = Field(None, description="For role 'tool': the call this answers.")
    name: str | None = Field(None, description="For role 'tool': the tool's name.")
    is_error: bool = Field(False, description="For role 'tool': the result is an error the model should see.")
    full_chars: int | None = Field(
        None, description="When the content was cut to a size cap (a tool result shown to the agent, an over-long "
        "answer, a transcript stored in results.jsonl): its length in characters before the cut."
    )
    reasoning: str | None = Field(None, description="Reasoning content, where the model gives it.")
    reasoning_signature: str | None = Field(
        None, description="Opaque signature of the reasoning (Anthropic thinking blocks), sent back unchanged."
    )
    plan: str | None = Field(
        None, description="The embedded local model's decision label: the one short line its answer grammar has it "
        "write before choosing (often a function's name). Provider-internal, not reasoning: never exported."
    )

    _valid_text = field_validator("content", "reasoning", "plan")(valid_text)


def _no_parameters() -> JSONObject:
    return {"type": "object", "properties": {}}


class ToolDef(BaseModel):
    """A tool as offered to a model (converted from an MCP tool listing)."""

    name: str
    description: str = ""
    input_schema: JSONObject = Field(default_factory=_no_parameters)


class GenerationSettings(BaseModel):
    """Per-call settings."""

    temperature: float | None = 0.0
    max_tokens: int | None = 1024
    timeout_s: float = Field(120.0, description="Per-request timeout in seconds.")
    seed: int | None = None
    stop: list[str] | None = None
    json_schema: JSONObject | None = Field(
        None, description="Ask for a JSON answer matching this schema (structured output), where supported."
    )


class AssistantTurn(BaseModel):
    """What one model call produced."""

    message: Message = Field(description="The assistant message (role 'assistant').")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost of this call.")
    finish_reason: str | None = Field(None, description="Provider's stop reason, normalised where possible.")
    latency_s: float = Field(0.0, description="Wall time of the call, retries included.")
    model: str = Field("", description="provider/model string that answered.")
    cached: bool = Field(False, description="True when the turn came from the on-disk response cache (no call made).")


@runtime_checkable
class Provider(Protocol):
    """An LLM seat. Implementations live one per module in envscaler_mcp.providers."""

    spec: str

    async def complete(
        self, messages: list[Message], tools: list[ToolDef] | None = None, settings: GenerationSettings | None = None
    ) -> AssistantTurn:
        """Run one model call."""
        ...

    async def aclose(self) -> None:
        """Release clients, servers and processes."""
        ...
