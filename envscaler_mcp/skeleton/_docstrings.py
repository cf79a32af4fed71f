"""Docstring parsing: per-parameter descriptions (Google `Args:` or Sphinx `:param x:`) and the rest as text."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_ARGS_HEADERS = {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "kwargs"}
_HEADER_RE = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ITEM_RE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_PARAM_RE = re.compile(r"^:param\s+(?:([^:]+?)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$")
_SPHINX_TYPE_RE = re.compile(r"^:type\s+[A-Za-z_][A-Za-z0-9_]*\s*:")
_SPHINX_FIELD_RE = re.compile(r"^:[a-zA-Z]+(\s[^:]*)?:")


@dataclass
class ParsedDocstring:
    """A docstring split into the tool description and the per-parameter descriptions."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _tidy(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if not line.strip() and (not out or not out[-1].strip()):
            continue  # collapse runs of blank lines, drop leading ones
        out.append(line.rstrip())
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def parse_docstring(doc: str | None) -> ParsedDocstring:
    """Split a docstring into its description (without the Args section) and parameter descriptions.

    Google style (`Args:` then `name (type): text`, continuation lines indented deeper) and Sphinx
    style (`:param name: text`, `:type name: ...`) are understood; other sections are kept as text.
    """
    if not doc:
        return ParsedDocstring()
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        header = _HEADER_RE.match(stripped)
        if header and header.group(1).strip().lower() in _ARGS_HEADERS:
            i = _parse_google_args(lines, i + 1, _indent(line), params)
            continue
        sphinx = _SPHINX_PARAM_RE.match(stripped)
        if sphinx:
            name, text = sphinx.group(2), [sphinx.group(3).strip()]
            i += 1
            while (
                i < len(lines)
                and lines[i].strip()
                and _indent(lines[i]) > _indent(line)
                and not _SPHINX_FIELD_RE.match(lines[i].strip())
            ):
                text.append(lines[i].strip())
                i += 1
            params[name] = " ".join(t for t in text if t)
            continue
        if _SPHINX_TYPE_RE.match(stripped):
            i += 1
            continue
        kept.append(line)
        i += 1
    return ParsedDocstring(description=_tidy(kept), params=params)


def _parse_google_args(lines: list[str], i: int, header_indent: int, params: dict[str, str]) -> int:
    """Read the entries of an Args section starting at line i; return the index after the section."""
    item_indent: int | None = None
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            # A blank line ends the section unless the next non-blank line is still indented under it.
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and _indent(lines[j]) > header_indent:
                i = j
                continue
            return j
        ind = _indent(line)
        if ind <= header_indent:
            return i
        if item_indent is None:
            item_indent = ind
        match = _GOOGLE_ITEM_RE.match(stripped)
        if ind <= item_indent and match:
            current = match.group(1)
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + " " + stripped).strip()
        i += 1
    return i
