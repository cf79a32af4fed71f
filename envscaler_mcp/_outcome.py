"""Did a tool call succeed? One answer for every stage, under the environment's own convention.

A call succeeded when it raised nothing (no `isError` result) and its result reports no error the way its
environment reports errors (`EnvSkeleton.success_convention`):

* `envscaler` (EnvScaler's methods, our catalog and synthesized environments): the result is an object
  with `"success": true`; `"success": false`, or no `success` field at all, is a failure.
* `error-field` (third-party code that answers errors as `{"error": "..."}`): a `success` field decides when
  there is one; otherwise a non-empty `error` (or `errors`) field is a failure and anything else succeeded.
* `no-error`: only a raised error (an `isError` result) is a failure.

`result` is the result's value (JSON parsed, or the text when it is not JSON); the replay, the import of
reference solutions, the transcript checks and the quality check all read it through `call_failure`.
Standard library only: the validator sandbox imports it (transcript_checks) before its limits apply.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

SuccessConvention = Literal["envscaler", "error-field", "no-error"]
CONVENTIONS: tuple[str, ...] = get_args(SuccessConvention)
DEFAULT_CONVENTION: SuccessConvention = "envscaler"
_ERROR_KEYS = ("error", "errors")


def call_failure(result: Any, is_error: bool, convention: str = DEFAULT_CONVENTION) -> str | None:
    """Why the call failed under `convention`, or None when it succeeded. An unknown convention raises
    ValueError (it is checked where it is read, so this is a programming error)."""
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown success convention {convention!r}; use one of {', '.join(CONVENTIONS)}")
    if is_error:
        return f"is_error: {_short(result) or '(no message)'}"
    if convention == "no-error":
        return None
    if isinstance(result, dict) and "success" in result:
        if result["success"] is True:
            return None
        return f"success is {result['success']!r}: {_short(result.get('error', ''))}"
    if convention == "envscaler":
        return f"result has no 'success' field: {_short(result)!r}"
    if isinstance(result, dict):
        for key in _ERROR_KEYS:
            if result.get(key) not in (None, "", [], {}, False):
                return f"{key}: {_short(result[key])}"
    return None


def call_succeeded(result: Any, is_error: bool, convention: str = DEFAULT_CONVENTION) -> bool:
    """True when `call_failure` finds nothing."""
    return call_failure(result, is_error, convention) is None


def guess_convention(source: str) -> SuccessConvention:
    """The convention of environment code that does not say: `envscaler` when its methods answer with a
    `success` key (EnvScaler's shape), else `error-field`."""
    return "envscaler" if "'success'" in source or '"success"' in source else "error-field"


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text.strip()[:limit]
