"""Who is at fault when an episode fails: the model, the infrastructure, or the harness itself.

* The model: `ModelFault` from the agent seat (context overflow, refusal, an invalid request its output
  produced). The episode ends with status `model_error` and is scored on the state it left.
* The infrastructure: transport errors, a provider that stayed down after its retries, a server that
  crashed, hung or could not be restarted, a validator sandbox fault. Retried on a fresh episode; after the
  retries the episode is `infra_error` and left out of the scores.
* The harness: anything else is a bug. It is not retried and not hidden as infra: the run stops.
"""

from __future__ import annotations

import anyio
import httpx2
from mcp import MCPError

from envscaler_mcp.errors import (
    OutputTooLarge,
    ProviderError,
    ProviderNotConfigured,
    ServerFault,
    ServerStartError,
    UsageError,
    ValidatorError,
)

_INFRA_TYPES: tuple[type[BaseException], ...] = (
    ServerFault,
    ServerStartError,
    ValidatorError,
    MCPError,
    OSError,
    TimeoutError,
    httpx2.TransportError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)


def is_infra(exc: BaseException) -> bool:
    """True when `exc` is an infrastructure failure (retry the episode), False for anything else.

    Provider errors count as infra except setup problems (ProviderNotConfigured: the run must stop) — a
    ModelFault reaching here comes from the simulated-user seat, which is part of the evaluation's machinery,
    not the model under test. An exception group is infra when every leaf is.
    """
    if isinstance(exc, BaseExceptionGroup):
        return all(is_infra(e) for e in exc.exceptions)
    if isinstance(exc, (UsageError, ProviderNotConfigured)):
        return False
    if isinstance(exc, ProviderError):
        return True
    return isinstance(exc, _INFRA_TYPES)


def not_retried(exc: BaseException) -> bool:
    """An infrastructure failure a retry would meet again: an environment's output past its size cap
    (OutputTooLarge), alone or in an exception group."""
    if isinstance(exc, BaseExceptionGroup):
        return bool(exc.exceptions) and any(not_retried(e) for e in exc.exceptions)
    return isinstance(exc, OutputTooLarge)


def describe(exc: BaseException) -> str:
    """'Type: first line of the message' of an exception (the single leaf of a one-exception group)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
