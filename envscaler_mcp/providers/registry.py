"""Choosing a provider by its `provider/model` string. Credentials and base URLs are read here and only here.

| spec | provider | settings read from the environment |
|---|---|---|
| `openai/<model>` | OpenAI chat completions | OPENAI_API_KEY (required), OPENAI_BASE_URL |
| `anthropic/<model>` | Anthropic messages API | ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL |
| `openai-compatible/<model>` | vLLM, Ollama, llama.cpp server... | OPENAI_COMPATIBLE_BASE_URL (required), OPENAI_COMPATIBLE_API_KEY |
| `local/<model>` | embedded llama.cpp model | ENVSCALER_MCP_LOCAL_RUNTIME (auto, llama-server, xllamacpp), ENVSCALER_MCP_LOCAL_THREADS (one per core) |
| `oracle` | replays a scenario's reference solution | - |
| `mock` | scripted answers (tests) | - |
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from envscaler_mcp.errors import ProviderNotConfigured, UsageError
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.providers.pricing import PriceTable
from envscaler_mcp.scenario.models import Scenario

PROVIDERS = ("openai", "anthropic", "openai-compatible", "local", "oracle", "mock")
SDK_OF = {"openai": "openai", "openai-compatible": "openai", "anthropic": "anthropic"}


def split_spec(spec: str) -> tuple[str, str]:
    """("provider", "model") of a spec; a clear error for an unknown provider or a missing model."""
    provider, _, model = spec.strip().partition("/")
    if provider not in PROVIDERS:
        raise UsageError(f"unknown provider '{provider}' in '{spec}'; use one of: "
                         + ", ".join(f"{p}/<model>" if p in SDK_OF or p == "local" else p for p in PROVIDERS))
    if provider in SDK_OF and not model:
        raise UsageError(f"'{spec}' names no model; write {provider}/<model>, e.g. {provider}/gpt-4.1-mini"
                         if provider != "anthropic" else f"'{spec}' names no model; e.g. anthropic/claude-sonnet-4-5")
    return provider, model


def env_var(service: str, what: str) -> str:
    """`<SERVICE>_<WHAT>` for a provider name (openai-compatible -> OPENAI_COMPATIBLE_API_KEY)."""
    return f"{service.upper().replace('-', '_')}_{what}"


def _import_sdk(provider: str) -> Any:
    name = SDK_OF[provider]
    try:
        return __import__(name)
    except ImportError as exc:
        raise ProviderNotConfigured(f"{provider}: the '{name}' package is not installed; run: pip install {name}") from exc


def _build_client(provider: str, api_key: str | None, base_url: str | None, env: Mapping[str, str]) -> Any:
    sdk = _import_sdk(provider)
    key_var, url_var = env_var(provider, "API_KEY"), env_var(provider, "BASE_URL")
    api_key = api_key or env.get(key_var)
    base_url = base_url or env.get(url_var)
    if provider == "openai-compatible":
        if not base_url:
            raise ProviderNotConfigured(
                f"openai-compatible: no server URL. Set {url_var} (e.g. http://127.0.0.1:8000/v1 for vLLM, "
                "http://127.0.0.1:11434/v1 for Ollama) or pass --base-url.")
        return sdk.AsyncOpenAI(api_key=api_key or "none", base_url=base_url, max_retries=0)
    if not api_key:
        raise ProviderNotConfigured(f"{provider}: no API key. Set {key_var} (or pass api_key=...).")
    if provider == "anthropic":
        return sdk.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0)
    return sdk.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)


def get_provider(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    client: Any = None,
    price_table: PriceTable | str | Path | Mapping[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    max_concurrency: int | None = None,
    retries: int = 4,
    backoff_base_s: float = 1.0,
    scenario: Scenario | None = None,
    script: Sequence[Any] | None = None,
    role: Literal["agent", "user"] = "agent",
    runtime: str | None = None,
    threads: int | None = None,
    ctx: int = 8192,
    local_mode: Literal["decision", "native"] = "decision",
    env: Mapping[str, str] | None = None,
) -> Provider:
    """Build the provider named by `spec`.

    `client` injects an SDK client (`openai.AsyncOpenAI` / `anthropic.AsyncAnthropic`, e.g. with a fake
    `http_client`); without one the registry builds a real client from the arguments or the environment
    (`env`, default `os.environ`), and that client's requests are refused while ENVSCALER_MCP_BLOCK_REQUESTS
    is set. `scenario`/`role` configure the oracle, `script` the mock, `runtime`/`threads`/`ctx`/`local_mode`
    the local model. Missing keys, SDKs, weights or runtimes raise ProviderNotConfigured saying what to set or install.
    """
    env = os.environ if env is None else env
    provider, model = split_spec(spec)
    if provider == "mock":
        from envscaler_mcp.providers.mock import MockProvider

        return MockProvider(script or (), spec=spec)
    if provider == "oracle":
        from envscaler_mcp.providers.oracle import OracleProvider

        if scenario is None:
            raise UsageError("the oracle provider replays a scenario's reference solution: it needs a scenario")
        return OracleProvider(scenario, role=role, spec=spec)
    options: dict[str, Any] = {"price_table": PriceTable.load(price_table), "cache_dir": cache_dir,
                               "retries": retries, "backoff_base_s": backoff_base_s}
    if max_concurrency is not None:
        options["max_concurrency"] = max_concurrency
    if provider == "local":
        options["mode"] = local_mode
        threads = threads or int(env.get("ENVSCALER_MCP_LOCAL_THREADS") or 0)  # 0: one per core
        return _local_provider(spec, model, client, runtime or env.get("ENVSCALER_MCP_LOCAL_RUNTIME") or "auto",
                               threads, ctx, options)
    network = client is None
    if client is None:
        client = _build_client(provider, api_key, base_url, env)
    if provider == "anthropic":
        from envscaler_mcp.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(spec, client, model=model, network=network, **options)
    from envscaler_mcp.providers.openai_chat import OpenAIChatProvider

    compatible = provider == "openai-compatible"
    return OpenAIChatProvider(spec, client, model=model, text_tool_calls=compatible, official=not compatible,
                              network=network, **options)


def _local_provider(spec: str, model: str, client: Any, runtime: str, threads: int, ctx: int,
                    options: dict[str, Any]) -> Provider:
    from envscaler_mcp.providers.local.provider import LocalProvider
    from envscaler_mcp.providers.local.server import pick_runtime, shared_server
    from envscaler_mcp.providers.local.weights import DEFAULT_LOCAL_MODEL, assembled_path, get_local_model

    weights = get_local_model(model or DEFAULT_LOCAL_MODEL)
    if runtime not in ("auto", "llama-server", "xllamacpp"):
        raise UsageError(f"unknown local runtime '{runtime}'; use auto, llama-server or xllamacpp")
    chosen = pick_runtime(runtime)  # type: ignore[arg-type]
    server = shared_server(assembled_path(weights), chosen, threads=threads, ctx=ctx)
    return LocalProvider(f"local/{weights.name}", weights, server, client=client, **options)
