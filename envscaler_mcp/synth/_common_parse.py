"""Robust extraction from model answers: Markdown sections, fenced code, JSON, scores and verdict words.

Every helper raises AnswerFormatError with a message written for the model (it is sent back on a retry),
so it says what was missing and what the answer should contain.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_HEADER_RES = (
    re.compile(r"^\s{0,3}#{1,6}\s*(?P<name>[^#\n]+?)\s*#*\s*:?\s*$"),  # # Header / ## Header: / ### Header ###
    re.compile(r"^\s{0,3}\*\*(?P<name>[^*\n]+?):?\*\*\s*:?\s*$"),  # **Header** / **Header:**
    re.compile(r"^\s{0,3}\[(?P<name>[A-Za-z][A-Za-z _-]{0,40})\]\s*:?\s*$"),  # [Header]
)
# "# Answer: YES" / "**Answer:** YES": a wanted header with its value on the same line.
_INLINE_HEADER_RES = (
    re.compile(r"^\s{0,3}#{1,6}\s*(?P<name>[^#:\n]+?)\s*:\s*(?P<value>\S.*)$"),
    re.compile(r"^\s{0,3}\*\*(?P<name>[^*:\n]+?)\s*(?::\*\*|\*\*\s*:)\s*(?P<value>\S.*)$"),
)
_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)")


class AnswerFormatError(ValueError):
    """A model answer could not be parsed; the message explains what to fix and is shown to the model."""


def normalize_header(name: str) -> str:
    """Lower-case a header, drop numbering, punctuation and extra spaces: '2. Class-Definition:' -> 'class definition'."""
    name = re.sub(r"^\s*(step\s*)?\d+[.)]\s*", "", name.strip(), flags=re.I)
    name = re.sub(r"[^a-z0-9]+", " ", name.lower())
    return " ".join(name.split())


def split_sections(text: str, names: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Split `text` at header lines naming one of `names` (any Markdown heading level, **bold** or [bracket]).

    Headers inside fenced code blocks are ignored (Python comments look like headings). Returns
    {wanted name: body text} for the sections found; a section that appears twice keeps its first body.
    """
    wanted = {normalize_header(n): n for n in names}
    found: dict[str, str] = {}
    current: str | None = None
    buffer: list[str] = []
    fence: str | None = None

    def flush() -> None:
        if current is not None and current not in found:
            found[current] = "\n".join(buffer).strip()

    for line in text.splitlines():
        match = _FENCE_RE.match(line)
        if match:
            marker = match.group(1)
            if fence is None:
                fence = marker[0] * 3
            elif line.strip().startswith(fence) and not match.group(2):
                fence = None
            buffer.append(line)
            continue
        header, inline = None, None
        if fence is None:
            for pattern in _HEADER_RES:
                m = pattern.match(line)
                if m and normalize_header(m.group("name")) in wanted:
                    header = wanted[normalize_header(m.group("name"))]
                    break
            else:
                for pattern in _INLINE_HEADER_RES:
                    m = pattern.match(line)
                    if m and normalize_header(m.group("name")) in wanted:
                        header, inline = wanted[normalize_header(m.group("name"))], m.group("value")
                        break
        if header is not None:
            flush()
            current, buffer = header, [inline] if inline else []
        else:
            buffer.append(line)
    flush()
    return found


def require_sections(text: str, names: list[str] | tuple[str, ...], *, optional: tuple[str, ...] = ()) -> dict[str, str]:
    """Like split_sections, but raise AnswerFormatError naming the sections that are missing or empty."""
    if not text or not text.strip():
        raise AnswerFormatError("the answer was empty; answer with the sections " + ", ".join(f"'# {n}'" for n in names))
    sections = split_sections(text, list(names) + list(optional))
    missing = [n for n in names if not sections.get(n)]
    if missing:
        raise AnswerFormatError(
            "missing or empty section(s): " + ", ".join(f"'# {n}'" for n in missing)
            + ". Start each section with its Markdown heading on its own line, e.g. '# " + missing[0] + "'."
        )
    return sections


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """All fenced code blocks as (language, body); an unclosed last fence runs to the end of the text."""
    blocks: list[tuple[str, str]] = []
    lang = ""
    fence: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        match = _FENCE_RE.match(line)
        if fence is None and match:
            fence, lang, body = match.group(1)[0] * 3, match.group(2).lower(), []
        elif fence is not None and line.strip().startswith(fence) and line.strip().strip(fence[0]) == "":
            blocks.append((lang, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
    if fence is not None and body:
        blocks.append((lang, "\n".join(body)))
    return blocks


def extract_code(text: str, *, what: str = "Python code") -> str:
    """Return the Python code in `text`: the first ```python block, else the first fence, else the text itself
    when it parses as Python."""
    blocks = fenced_blocks(text)
    for lang, body in blocks:
        if lang in ("python", "py", "python3") and body.strip():
            return body.strip("\n")
    for _lang, body in blocks:
        if body.strip():
            return body.strip("\n")
    stripped = text.strip()
    if stripped:
        try:
            ast.parse(stripped)
            return stripped
        except SyntaxError:
            pass
    raise AnswerFormatError(f"no {what} found: put it in one ```python fenced block")


def _balanced_json_span(text: str) -> str | None:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth, in_string, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return None


def loads_lenient(text: str) -> Any:
    """json.loads, then the same without trailing commas, then a Python literal (True/None/single quotes)."""
    errors = []
    for candidate in (text, re.sub(r",\s*([}\]])", r"\1", text)):
        try:
            return json.loads(candidate, strict=False)
        except json.JSONDecodeError as exc:
            errors.append(f"line {exc.lineno} column {exc.colno}: {exc.msg}")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    raise AnswerFormatError("the JSON is not valid (" + errors[0] + "); write strict JSON in a ```json fenced block")


def extract_json(text: str, *, expect: type | tuple[type, ...] = dict, what: str = "JSON object") -> Any:
    """Find and decode the JSON value in `text` (a ```json block, any fence, or the first balanced {...}/[...])."""
    candidates = [body for lang, body in fenced_blocks(text) if lang in ("json", "jsonc", "")] or [
        body for _lang, body in fenced_blocks(text)
    ]
    span = _balanced_json_span(text)
    if span:
        candidates.append(span)
    if not candidates:
        raise AnswerFormatError(f"no {what} found: put it in one ```json fenced block")
    first_error: AnswerFormatError | None = None
    for candidate in candidates:
        try:
            value = loads_lenient(candidate.strip())
        except AnswerFormatError as exc:
            first_error = first_error or exc
            continue
        if isinstance(value, expect):
            return value
        first_error = first_error or AnswerFormatError(
            f"expected a {what} but got a JSON {type(value).__name__}"
        )
    assert first_error is not None
    raise first_error


def parse_score(text: str, label: str) -> int:
    """Read 'Label: 8', 'Label: 8/10' or '**Label**: 8 out of 10' as an int in 1..10."""
    match = re.search(rf"{re.escape(label)}\W*?(?:score)?\W*(\d{{1,2}})(?:\s*(?:/|out of)\s*10)?", text, flags=re.I)
    if not match:
        raise AnswerFormatError(f"no '{label}: <1-10>' line found in the Metrics section")
    value = int(match.group(1))
    if not 1 <= value <= 10:
        raise AnswerFormatError(f"'{label}' must be an integer from 1 to 10, got {value}")
    return value


def parse_choice(text: str, choices: tuple[str, ...], *, what: str) -> str:
    """The one word of `choices` that `text` states (first word wins; 'NO' inside 'NOTE' does not count)."""
    words = re.findall(r"[A-Za-z]+", text)
    lowered = {c.lower(): c for c in choices}
    for word in words:
        if word.lower() in lowered:
            return lowered[word.lower()]
    raise AnswerFormatError(f"the {what} must be one of {', '.join(choices)}; got {text.strip()[:80]!r}")
