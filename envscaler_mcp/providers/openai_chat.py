"""OpenAI chat completions: the `openai/...` models and any OpenAI-compatible server (`openai-compatible/...`:
vLLM, Ollama, llama.cpp server)."""

from __future__ import annotations

import re
from typing import Any

from envscaler_mcp.providers._adapter import BaseProvider
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, Provider, ToolDef
from envscaler_mcp.providers.credentials import SDKOptions
from envscaler_mcp.providers.registry import register_provider
from envscaler_mcp.providers.textcalls import parse_text_tool_calls
from envscaler_mcp.providers.tools import ToolNames, from_openai_message, openai_tools, to_openai_messages

# OpenAI reasoning models refuse `temperature` and want `max_completion_tokens`.
_REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
_FINISH = {"tool_calls": "tool_calls", "function_call": "tool_calls", "stop": "stop", "length": "length",
           "content_filter": "content_filter"}


def json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions `response_format` asking for JSON matching `schema`."""
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": False}}


class OpenAIChatProvider(BaseProvider):
    """Chat completions through an `openai.AsyncOpenAI` client (injected, or built by the registry).

    With `text_tool_calls=True` (OpenAI-compatible servers, small local models), calls the model wrote
    as text are parsed when the native `tool_calls` list is empty.
    """

    def __init__(self, spec: str, client: Any, *, model: str, text_tool_calls: bool = False,
                 official: bool = True, **options: Any) -> None:
        super().__init__(spec, **options)
        self.client = client
        self.model = model
        self.text_tool_calls = text_tool_calls
        self.official = official

    def request_body(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings,
                     names: ToolNames) -> dict[str, Any]:
        """Keyword arguments of `chat.completions.create` for one call."""
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(messages, names)}
        if tools:
            body["tools"] = openai_tools(tools, names)
        reasoning = self.official and bool(_REASONING_MODEL.match(self.model))
        if settings.temperature is not None and not reasoning:
            body["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            body["max_completion_tokens" if self.official else "max_tokens"] = settings.max_tokens
        if settings.seed is not None:
            body["seed"] = settings.seed
        if settings.stop:
            body["stop"] = settings.stop
        if settings.json_schema is not None:
            body["response_format"] = json_schema_format(settings.json_schema)
        return body

    def turn_from_response(self, response: Any, tools: list[ToolDef], names: ToolNames) -> AssistantTurn:
        """Our turn from a `ChatCompletion`: message, usage with cost, normalised finish reason."""
        choice = response.choices[0]
        message = from_openai_message(choice.message, names)
        if self.text_tool_calls and not message.tool_calls and tools and message.content:
            calls, rest = parse_text_tool_calls(message.content, [t.name for t in tools])
            if calls:
                message = message.model_copy(update={"tool_calls": calls, "content": rest})
        usage_obj = getattr(response, "usage", None)
        prompt = getattr(usage_obj, "prompt_tokens", 0) or 0
        completion = getattr(usage_obj, "completion_tokens", 0) or 0
        details = getattr(usage_obj, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", 0) or 0
        finish = "tool_calls" if message.tool_calls else _FINISH.get(choice.finish_reason or "", choice.finish_reason)
        return AssistantTurn(message=message, usage=self.prices.usage(self.spec, prompt, completion, cached),
                             finish_reason=finish, model=self.spec)

    async def _send(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        names = ToolNames.from_defs(tools)
        body = self.request_body(messages, tools, settings, names)
        response = await self.client.chat.completions.create(**body, timeout=settings.timeout_s)
        return self.turn_from_response(response, tools, names)

    async def aclose(self) -> None:
        """Close the SDK client."""
        close = getattr(self.client, "close", None)
        if close is not None:
            await close()



@register_provider("openai", options=SDKOptions, example="openai/gpt-4.1-mini")
def openai_provider(spec: str, model: str, options: SDKOptions) -> Provider:
    """`openai/<model>`: the OpenAI API (OPENAI_API_KEY required, OPENAI_BASE_URL optional)."""
    client = options.sdk_client("openai", "openai", lambda sdk, key, url: sdk.AsyncOpenAI(
        api_key=key, base_url=url, max_retries=0))
    return OpenAIChatProvider(spec, client, model=model, network=options.client is None,
                              **options.adapter_options())


@register_provider("openai-compatible", options=SDKOptions, example="openai-compatible/gpt-4.1-mini")
def openai_compatible_provider(spec: str, model: str, options: SDKOptions) -> Provider:
    """`openai-compatible/<model>`: any chat-completions server (OPENAI_COMPATIBLE_BASE_URL required);
    tool calls written as text are parsed too."""
    client = options.sdk_client(
        "openai-compatible", "openai",
        lambda sdk, key, url: sdk.AsyncOpenAI(api_key=key or "none", base_url=url, max_retries=0),
        need="BASE_URL", hint="(e.g. http://127.0.0.1:8000/v1 for vLLM, http://127.0.0.1:11434/v1 for Ollama) "
        "or, on eval, pass --agent-base-url")
    return OpenAIChatProvider(spec, client, model=model, text_tool_calls=True, official=False,
                              network=options.client is None, **options.adapter_options())
