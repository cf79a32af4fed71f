"""What every network-backed provider shares: the request kill switch, retries with backoff, per-request
timeout, a concurrency limit, cost accounting and the optional response cache.

Retries are tenacity's (a maintained retry library) with our own policy: which failures are worth another
try (`is_retryable`) and how long to wait (`Retry-After` honoured). The SDKs' own retries stay off, so one
policy holds for every provider, the local model and OpenAI-compatible servers included."""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2
from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from envscaler_mcp.errors import (
    EnvScalerError,
    ModelFault,
    ProviderError,
    ProviderNotConfigured,
    ProviderUnavailable,
)
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.cache import ResponseCache, request_body, request_key
from envscaler_mcp.providers.pricing import PriceTable

BLOCK_ENV = "ENVSCALER_MCP_BLOCK_REQUESTS"
RETRY_STATUS = frozenset({408, 409, 429})


class RequestsBlocked(ProviderError):
    """A real model request was attempted while the kill switch is on (the test suite sets it)."""


def requests_blocked() -> bool:
    """True while ENVSCALER_MCP_BLOCK_REQUESTS is set to a true value."""
    return os.environ.get(BLOCK_ENV, "").strip().lower() not in ("", "0", "false", "no")


def check_allow_requests(what: str) -> None:
    """Raise RequestsBlocked when real requests are blocked."""
    if requests_blocked():
        raise RequestsBlocked(
            f"{what}: real model requests are blocked because {BLOCK_ENV}=1 (the test suite sets it). "
            "Inject a client with a fake transport, or unset the variable to reach a real model."
        )


def status_of(exc: BaseException) -> int | None:
    """HTTP status carried by an SDK error, if any."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_retryable(exc: BaseException) -> bool:
    """429, 408/409, 5xx, timeouts and connection errors are worth another try; other 4xx are not."""
    if isinstance(exc, RequestsBlocked):
        return False
    status = status_of(exc)
    if status is not None:
        return status in RETRY_STATUS or status >= 500
    name = type(exc).__name__
    return isinstance(exc, (TimeoutError, httpx2.TransportError, ConnectionError)) or name in (
        "APITimeoutError", "APIConnectionError")


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# How providers word a request that no longer fits the model's context (OpenAI, Anthropic, vLLM, llama.cpp,
# Ollama); matched case-insensitively against the error body.
_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context (?:length|window|size)|prompt is too long|"
    r"exceeds? the (?:available )?context|too many (?:input )?tokens|input (?:is )?too long|"
    r"reduce the length of the messages",
    re.IGNORECASE,
)
_REFUSAL = re.compile(r"content[_ ]policy|content[_ ]filter|safety system|flagged", re.IGNORECASE)


def classify_rejection(spec: str, exc: BaseException) -> ProviderError:
    """What a non-retryable provider error means: a setup problem the user must fix (bad key, unknown
    model: stops the run), or a fault of the model's own making (context overflow, refusal, an invalid
    request its output produced: scored as the model's failure)."""
    status = status_of(exc)
    detail = describe_error(exc)
    if status in (401, 403):
        return ProviderNotConfigured(f"{spec}: the provider refused the credentials ({detail}); check the API key")
    if status == 404:
        return ProviderNotConfigured(f"{spec}: the provider does not know this model ({detail}); check the name")
    if _OVERFLOW.search(detail):
        return ModelFault(f"{spec}: the conversation no longer fits the model's context ({detail})",
                          "context_overflow")
    if _REFUSAL.search(detail):
        return ModelFault(f"{spec}: the provider refused the request ({detail})", "refusal")
    return ModelFault(f"{spec}: request rejected ({detail}); not retried", "invalid_request")


def describe_error(exc: BaseException) -> str:
    """A short description of a provider failure."""
    status = status_of(exc)
    body = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"HTTP {status}: {body}" if status is not None else f"{type(exc).__name__}: {body}"


class NetworkOptions(BaseModel):
    """The request machinery's options, shared by every provider built on BaseProvider."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    price_table: PriceTable | str | Path | dict[str, Any] | None = Field(
        None, description="Prices: a JSON file, a mapping or a PriceTable (default: the built-in table).")
    cache_dir: str | Path | None = Field(None, description="Response cache folder (default: no cache).")
    max_concurrency: int | None = Field(None, ge=1, description="Requests at the same time (default 4).")
    retries: int = Field(4, ge=0, description="Retries after a retryable failure.")
    backoff_base_s: float = Field(1.0, ge=0, description="First backoff delay; doubles per retry.")

    def adapter_options(self) -> dict[str, Any]:
        """Keyword arguments of BaseProvider.__init__."""
        options: dict[str, Any] = {"price_table": PriceTable.load(self.price_table), "cache_dir": self.cache_dir,
                                   "retries": self.retries, "backoff_base_s": self.backoff_base_s}
        if self.max_concurrency is not None:
            options["max_concurrency"] = self.max_concurrency
        return options


class BaseProvider:
    """Shared request machinery; subclasses implement `_send` (one attempt, no retry)."""

    def __init__(
        self,
        spec: str,
        *,
        price_table: PriceTable | None = None,
        cache_dir: str | Path | None = None,
        max_concurrency: int = 4,
        retries: int = 4,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 30.0,
        network: bool = True,
    ) -> None:
        self.spec = spec
        self.prices = price_table or PriceTable()
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.limiter = anyio.CapacityLimiter(max(1, max_concurrency))
        self.retries = max(0, retries)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._network = network  # False when the SDK client was injected (tests, custom transports)

    async def _send(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        raise NotImplementedError

    def _backoff(self, attempt: int, exc: BaseException) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * (2.0**attempt))
        hinted = _retry_after(exc)
        if hinted is not None:
            delay = min(self.backoff_max_s, max(delay, hinted))
        return delay * random.uniform(0.5, 1.0)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolDef] | None = None,
        settings: GenerationSettings | None = None,
    ) -> AssistantTurn:
        """One model call: cache lookup, then up to 1 + retries attempts under the concurrency limit."""
        messages, tool_list = list(messages), list(tools or [])
        settings = settings or GenerationSettings()
        key = request_key(self.spec, messages, tool_list, settings) if self.cache else None
        if self.cache and key:
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        if self._network:
            check_allow_requests(self.spec)
        started = time.monotonic()
        async with self.limiter:
            try:
                turn = await self._attempts(messages, tool_list, settings)
            except ModelFault as exc:  # the model's own failure: the same request fails the same way
                if self.cache and key:
                    self.cache.put_fault(key, self.spec, exc, request_body(self.spec, messages, tool_list, settings))
                raise
        turn = turn.model_copy(update={"latency_s": time.monotonic() - started, "model": self.spec})
        if self.cache and key:
            self.cache.put(key, self.spec, turn, request_body(self.spec, messages, tool_list, settings))
        return turn

    def _wait(self, state: RetryCallState) -> float:
        failed = state.outcome.exception() if state.outcome is not None else None
        return self._backoff(state.attempt_number - 1, failed or Exception())

    async def _attempts(self, messages: list[Message], tools: list[ToolDef], settings: GenerationSettings) -> AssistantTurn:
        """Up to 1 + retries attempts (tenacity: retried while `is_retryable`, waits from `_backoff`)."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries + 1), wait=self._wait, sleep=anyio.sleep, reraise=True,
            retry=retry_if_exception(lambda e: isinstance(e, Exception) and not isinstance(e, EnvScalerError)
                                     and is_retryable(e)))
        try:
            async for attempt in retrying:
                with attempt, anyio.fail_after(settings.timeout_s):
                    return await self._send(messages, tools, settings)
        except EnvScalerError:  # already says what is wrong (blocked, not configured, server start)
            raise
        except Exception as exc:
            if not is_retryable(exc):
                if status_of(exc) is None:  # not an answer from the service: a bug, not the model's fault
                    raise
                raise classify_rejection(self.spec, exc) from exc
            raise ProviderUnavailable(
                f"{self.spec}: failed after {self.retries + 1} attempts ({describe_error(exc)}). "
                "The service may be down or rate-limited: try again later or lower --concurrency."
            ) from exc
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        """Release the client (subclasses with resources override)."""
