"""Free fields: glob patterns over state paths whose values the state check does not compare.

A pattern is a path written as `diff.format_path` writes one, with wildcards:

* `orders.*.cancel_reason`    `*` is one key; inside a key it is a glob (`orders.*.*_at`);
* `tickets.*.comments[*].text` `[*]` is any list index (`[2]` one index);
* `**`                        any number of levels (`**.note`);
* `orders['O-1'].note`        a quoted key is literal (dots, brackets and `*` in it mean themselves).

A pattern frees the subtree under it. A path is free when some free pattern matches it (or one of its
ancestors) and no `not_free` pattern does.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from envscaler_mcp.compare.diff import PathPart

Token = tuple[str, Any]  # ("glob", str) | ("key", str) | ("index", int | None) | ("deep", None)


def parse_pattern(pattern: str) -> tuple[Token, ...]:
    """The tokens of a free-field pattern; ValueError naming the problem for a malformed one."""
    tokens: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == ".":
            if not tokens or i + 1 >= n or pattern[i + 1] in ".[":
                raise ValueError(f"bad free-field pattern {pattern!r}: empty key at position {i}")
            i += 1
            continue
        if char == "[":
            end = _closing(pattern, i)
            inner = pattern[i + 1:end]
            if inner == "*":
                tokens.append(("index", None))
            elif inner.isdigit():
                tokens.append(("index", int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                tokens.append(("key", inner[1:-1].replace("\\" + inner[0], inner[0])))
            else:
                raise ValueError(f"bad free-field pattern {pattern!r}: [{inner}] is not [*], [N] or ['key']")
            i = end + 1
            continue
        end = i
        while end < n and pattern[end] not in ".[":
            end += 1
        word = pattern[i:end]
        tokens.append(("deep", None) if word == "**" else ("glob", word))
        i = end
    if not tokens:
        raise ValueError("bad free-field pattern: it is empty")
    return tuple(tokens)


def _closing(pattern: str, start: int) -> int:
    quote = pattern[start + 1] if start + 1 < len(pattern) and pattern[start + 1] in "'\"" else None
    i = start + 2 if quote else start + 1
    while i < len(pattern):
        if quote and pattern[i] == "\\":
            i += 2
            continue
        if (not quote and pattern[i] == "]") or (quote and pattern[i] == quote and pattern[i + 1:i + 2] == "]"):
            return i + (1 if quote else 0)
        i += 1
    raise ValueError(f"bad free-field pattern {pattern!r}: '[' at position {start} is not closed")


def matches(tokens: tuple[Token, ...], path: list[PathPart] | tuple[PathPart, ...]) -> bool:
    """True when the pattern matches `path` or one of its ancestors."""
    return _match(tokens, 0, tuple(path), 0)


def _match(tokens: tuple[Token, ...], ti: int, path: tuple[PathPart, ...], pi: int) -> bool:
    if ti == len(tokens):
        return True
    kind, value = tokens[ti]
    if kind == "deep":
        return _match(tokens, ti + 1, path, pi) or (pi < len(path) and _match(tokens, ti, path, pi + 1))
    if pi == len(path):
        return False
    part = path[pi]
    if kind == "index":
        ok = isinstance(part, int) and (value is None or value == part)
    elif kind == "key":
        ok = isinstance(part, str) and part == value
    else:
        ok = isinstance(part, str) and fnmatchcase(part, value)
    return ok and _match(tokens, ti + 1, path, pi + 1)


def literal_pattern(path: list[PathPart], wildcard: Iterable[str] = ()) -> str:
    """A pattern matching exactly `path`, with list indexes as `[*]` and the keys in `wildcard` as `*`."""
    wild = set(wildcard)
    out = ""
    for part in path:
        if isinstance(part, int):
            out += "[*]"
        elif part in wild:
            out += ".*" if out else "*"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += "[" + repr(part) + "]"
    return out


def _pair(item: Any) -> tuple[str, str]:
    if isinstance(item, tuple):
        return str(item[0]), str(item[1])
    return str(item.path), str(getattr(item, "reason", ""))


class FreeFields:
    """A set of free-field patterns (each with its reason) and `not_free` exceptions.

    `free` takes (pattern, reason) pairs or objects with `.path` and `.reason` (skeleton.models.FreeField).
    """

    def __init__(self, free: Iterable[Any] = (), not_free: Iterable[str] = ()) -> None:
        self.patterns: list[tuple[str, str]] = list(dict.fromkeys(_pair(f) for f in free))
        self.not_free: list[str] = list(dict.fromkeys(not_free))
        self._free = [(parse_pattern(p), reason) for p, reason in self.patterns]
        self._not_free = [parse_pattern(p) for p in self.not_free]
        self._cache: dict[tuple[PathPart, ...], str | None] = {}

    def reason(self, path: list[PathPart] | tuple[PathPart, ...]) -> str | None:
        """Why `path` is free, or None when it is compared."""
        key = tuple(path)
        if key not in self._cache:
            found = next((reason or "free" for tokens, reason in self._free if matches(tokens, key)), None)
            if found is not None and any(matches(tokens, key) for tokens in self._not_free):
                found = None
            self._cache[key] = found
        return self._cache[key]

    def __add__(self, other: FreeFields) -> FreeFields:
        return FreeFields([*self.patterns, *other.patterns], [*self.not_free, *other.not_free])

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __repr__(self) -> str:
        return f"FreeFields({self.patterns!r}, not_free={self.not_free!r})"
