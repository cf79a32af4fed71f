"""Anthropic messages API with tool use (`anthropic/...` models)."""

from __future__ import annotations

from typing import Any

from envscaler_mcp.providers._adapter import BaseProvider
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, Provider, ToolDef
from envscaler_mcp.providers.credentials import SDKOptions
from envscaler_mcp.providers.registry import register_provider
from envscaler_mcp.providers.tools import (
    ToolNames,
    anthropic_tools,
    from_anthropic_content,
    to_anthropic_messages,
)

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
           "refusal": "content_filter", "pause_turn": "stop"}


class AnthropicProvider(BaseProvider):
    """Messages API through an `anthropic.AsyncAnthropic` client (injected, or built by the registry)."""

    def __init__(self, spec: str, client: Any, *, model: str, **options: Any) -> None:
        super().__init__(spec, **options)
        self.client = client
        self.model = model

    def request_body(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings,
                     names: ToolNames) -> dict[str, Any]:
        """Keyword arguments of `messages.create` for one call."""
        system, converted = to_anthropic_messages(messages, names)
        body: dict[str, Any] = {"model": self.model, "messages": converted,
                                "max_tokens": settings.max_tokens or 4096}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = anthropic_tools(tools, names)
        # The 2.x SDK's messages.create has no sampling parameters (temperature, seed): they are not sent.
        if settings.json_schema is not None:
            body["output_config"] = {"format": {"type": "json_schema", "schema": settings.json_schema}}
        if settings.stop:
            body["stop_sequences"] = settings.stop
        return body

    def turn_from_response(self, response: Any, names: ToolNames) -> AssistantTurn:
        """Our turn from an Anthropic `Message`; cache reads and writes count as prompt tokens."""
        message = from_anthropic_content(response.content, names)
        u = response.usage
        cache_read = getattr(u, "cache_read_input_tokens", 0) or 0
        cache_write = getattr(u, "cache_creation_input_tokens", 0) or 0
        prompt = (u.input_tokens or 0) + cache_read + cache_write
        usage = self.prices.usage(self.spec, prompt, u.output_tokens or 0, cache_read)
        finish = _FINISH.get(response.stop_reason or "", response.stop_reason)
        return AssistantTurn(message=message, usage=usage, finish_reason=finish, model=self.spec)

    async def _send(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        names = ToolNames.from_defs(tools)
        body = self.request_body(messages, tools, settings, names)
        response = await self.client.messages.create(**body, timeout=settings.timeout_s)
        return self.turn_from_response(response, names)

    async def aclose(self) -> None:
        """Close the SDK client."""
        close = getattr(self.client, "close", None)
        if close is not None:
            await close()



@register_provider("anthropic", options=SDKOptions, example="anthropic/claude-sonnet-4-5")
def anthropic_provider(spec: str, model: str, options: SDKOptions) -> Provider:
    """`anthropic/<model>`: the Anthropic API (ANTHROPIC_API_KEY required, ANTHROPIC_BASE_URL optional)."""
    client = options.sdk_client("anthropic", "anthropic", lambda sdk, key, url: sdk.AsyncAnthropic(
        api_key=key, base_url=url, max_retries=0))
    return AnthropicProvider(spec, client, model=model, network=options.client is None,
                             **options.adapter_options())
