"""Credentials and server URLs of the SDK-backed providers: taken from the options or read from the
environment, here and only here."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field

from envscaler_mcp.errors import ProviderNotConfigured
from envscaler_mcp.providers._adapter import NetworkOptions


def env_var(service: str, what: str) -> str:
    """`<SERVICE>_<WHAT>` for a provider name (openai-compatible -> OPENAI_COMPATIBLE_API_KEY)."""
    return f"{service.upper().replace('-', '_')}_{what}"


def import_sdk(service: str, package: str) -> Any:
    """The SDK module, or ProviderNotConfigured naming the pip command."""
    try:
        return __import__(package)
    except ImportError as exc:
        raise ProviderNotConfigured(
            f"{service}: the '{package}' package is not installed; run: pip install {package}") from exc


class SDKOptions(NetworkOptions):
    """Options of a provider that talks to a service through its SDK client."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    client: Any = Field(None, description="An SDK client to use as is (tests inject fakes); no request guard.")
    api_key: str | None = Field(None, description="API key (default: <SERVICE>_API_KEY).")
    base_url: str | None = Field(None, description="Endpoint (default: <SERVICE>_BASE_URL).")
    env: Mapping[str, str] | None = Field(None, description="Where to read variables (default: os.environ).")

    def resolved(self, service: str) -> tuple[str | None, str | None]:
        """(api key, base url): the options first, then <SERVICE>_API_KEY / <SERVICE>_BASE_URL."""
        env = os.environ if self.env is None else self.env
        return (self.api_key or env.get(env_var(service, "API_KEY")),
                self.base_url or env.get(env_var(service, "BASE_URL")))

    def sdk_client(self, service: str, package: str, make: Callable[[Any, str | None, str | None], Any], *,
                   need: Literal["API_KEY", "BASE_URL"] = "API_KEY", hint: str = "(or pass api_key=...)") -> Any:
        """The injected client, or `make(sdk module, api key, base url)` once the SDK imports and the
        needed setting is present (else ProviderNotConfigured naming the variable)."""
        if self.client is not None:
            return self.client
        sdk = import_sdk(service, package)
        api_key, base_url = self.resolved(service)
        if not (api_key if need == "API_KEY" else base_url):
            what = "API key" if need == "API_KEY" else "server URL"
            raise ProviderNotConfigured(f"{service}: no {what}. Set {env_var(service, need)} {hint}.")
        return make(sdk, api_key, base_url)
