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

`read_result` is the one reading of an MCP `CallToolResult` (its text, value and error flag) for every stage:
the agent's episode, the replay of a reference or wrong solution, the quality check. So an agent's call and the
same call replayed are recorded, and judged, alike on any server, also one whose text and structured content
differ. Standard library only: the validator sandbox imports it (transcript_checks) before its limits apply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

SuccessConvention = Literal["envscaler", "error-field", "no-error"]
CONVENTIONS: tuple[str, ...] = get_args(SuccessConvention)
DEFAULT_CONVENTION: SuccessConvention = "envscaler"
ConventionChoice = Literal["auto", SuccessConvention]  # given for an import: a convention, or a guess from the code
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


def json_or_text(text: str) -> Any:
    """A tool result's text as data: its JSON value when it parses, else the text itself."""
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested past the interpreter's limit
        return text


@dataclass(frozen=True)
class ToolResult:
    """A tool result as every stage reads it: `text` is what a model is shown and a transcript records."""

    text: str
    is_error: bool

    @property
    def value(self) -> Any:
        """The text's JSON value, else the text (what a transcript's `result` holds)."""
        return json_or_text(self.text)

    def failure(self, convention: str = DEFAULT_CONVENTION) -> str | None:
        """Why the call failed under `convention` (`call_failure`; an error result is described by its text),
        or None when it succeeded."""
        return call_failure(self.text if self.is_error else self.value, self.is_error, convention)


def read_result(result: Any) -> ToolResult:
    """Read an MCP `CallToolResult` (or an object of its shape). The text is its text blocks joined by newlines
    (other blocks, such as images, have none); a result without text blocks is its structured content as JSON
    (`null` when it has none either). A server's structured content is the value its text describes (the
    generated servers send the same JSON in both), and the text is what a model sees, so the text decides."""
    texts = [t for t in (getattr(block, "text", None) for block in getattr(result, "content", None) or [])
             if isinstance(t, str)]
    if texts:
        text = "\n".join(texts)
    else:
        text = json.dumps(getattr(result, "structured_content", None), ensure_ascii=False)
    return ToolResult(text=text, is_error=bool(getattr(result, "is_error", False)))


def guess_convention(source: str) -> SuccessConvention:
    """The convention of environment code that does not say: `envscaler` when its methods answer with a
    `success` key (EnvScaler's shape), else `error-field`."""
    return "envscaler" if "'success'" in source or '"success"' in source else "error-field"


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text.strip()[:limit]
