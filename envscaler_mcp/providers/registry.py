"""Choosing a provider by its `provider/model` string.

Each provider module registers its name, its option model (pydantic) and a factory with
`@register_provider`; `get_provider(spec, **options)` validates the options against that model and
calls the factory. Adding a provider is one module with a decorated factory, listed in BUILTIN so it is
imported on first use (the SDKs themselves load only when a provider is built).

| spec | provider (module) | settings read from the environment |
|---|---|---|
| `openai/<model>` | OpenAI chat completions (openai_chat) | OPENAI_API_KEY (required), OPENAI_BASE_URL |
| `openai-compatible/<model>` | vLLM, Ollama, llama.cpp server... (openai_chat) | OPENAI_COMPATIBLE_BASE_URL (required), OPENAI_COMPATIBLE_API_KEY |
| `anthropic/<model>` | Anthropic messages API (anthropic_messages) | ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL |
| `local/<model>` | embedded llama.cpp model (local.provider) | ENVSCALER_MCP_LOCAL_RUNTIME (auto, llama-server, xllamacpp), ENVSCALER_MCP_LOCAL_THREADS (one per core), ENVSCALER_MCP_PROMPT_CACHE_DIR |
| `mock` | scripted answers for tests (mock) | - |
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers.base import Provider

BUILTIN = (
    "envscaler_mcp.providers.openai_chat",
    "envscaler_mcp.providers.anthropic_messages",
    "envscaler_mcp.providers.local.provider",
    "envscaler_mcp.providers.mock",
)

OptionsT = TypeVar("OptionsT", bound=BaseModel)
Factory = Callable[[str, str, Any], Provider]  # (spec, model, validated options) -> Provider


@dataclass(frozen=True)
class ProviderEntry:
    """One registered provider."""

    name: str
    options: type[BaseModel]
    factory: Factory
    needs_model: bool
    example: str  # a full spec, shown when the model is missing
    usage: str  # how a spec is written, shown when the name is unknown


_REGISTRY: dict[str, ProviderEntry] = {}


def register_provider(name: str, *, options: type[OptionsT], needs_model: bool = True, example: str = "",
                      usage: str = "") -> Callable[[Callable[[str, str, OptionsT], Provider]],
                                                   Callable[[str, str, OptionsT], Provider]]:
    """Decorator: register `factory(spec, model, options) -> Provider` under `name`.

    `options` is the pydantic model of the keyword options `get_provider` accepts for this provider
    (unknown options are refused); `example` is a full spec and `usage` the spec's form, both shown in
    error messages."""

    def decorate(factory: Callable[[str, str, OptionsT], Provider]) -> Callable[[str, str, OptionsT], Provider]:
        form = usage or (f"{name}/<model>" if needs_model else name)
        _REGISTRY[name] = ProviderEntry(name, options, factory, needs_model, example or name, form)
        return factory

    return decorate


def _registry() -> dict[str, ProviderEntry]:
    for module in BUILTIN:
        importlib.import_module(module)  # each registers itself on import (a no-op once imported)
    return _REGISTRY


def provider_names() -> list[str]:
    """Every registered provider name, sorted."""
    return sorted(_registry())


def split_spec(spec: str) -> tuple[str, str]:
    """("provider", "model") of a spec; a clear error for an unknown provider or a missing model."""
    name, _, model = spec.strip().partition("/")
    registry = _registry()
    entry = registry.get(name)
    if entry is None:
        raise UsageError(f"unknown provider '{name}' in '{spec}'; use one of: "
                         + ", ".join(registry[n].usage for n in sorted(registry)))
    if entry.needs_model and not model:
        raise UsageError(f"'{spec}' names no model; write {name}/<model>, e.g. {entry.example}")
    return name, model


def _options(entry: ProviderEntry, given: dict[str, Any]) -> BaseModel:
    unknown = sorted(set(given) - set(entry.options.model_fields))
    if unknown:
        raise UsageError(f"{entry.name}: unknown option(s) {', '.join(unknown)}; "
                         f"it takes: {', '.join(entry.options.model_fields)}")
    try:
        return entry.options.model_validate(given)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"{entry.name}: bad option ({problems})") from None


def get_provider(spec: str, **options: Any) -> Provider:
    """Build the provider named by `spec` with its options (None means "not given", the default applies).

    The SDK providers take `client` (an injected SDK client, e.g. with a fake `http_client`); without one
    they build a real client from `api_key`/`base_url` or the environment (`env`, default `os.environ`),
    and that client's requests are refused while ENVSCALER_MCP_BLOCK_REQUESTS is set. Each provider's
    option model lists what it takes (see docs/providers.md). Missing keys, SDKs, weights or runtimes raise
    ProviderNotConfigured saying what to set or install.
    """
    name, model = split_spec(spec)
    entry = _REGISTRY[name]
    given = {key: value for key, value in options.items() if value is not None}
    return entry.factory(spec, model, _options(entry, given))
