"""The JSON values that cross stages, named: `JSON`, `JSONObject`, and an environment's `State`.

For the type checker `JSON` is the recursive union of what `json.loads` returns, so code that walks a
state or a tool's arguments has to narrow (`isinstance`) before it indexes. At run time the aliases are
`Any`: pydantic models that hold states (a scenario's initial state, a skeleton's default state) neither
validate nor copy them on construction, exactly as before the aliases existed; their content is checked
where it enters (JSON files, the server's admin plane, the skeleton's state checks).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
    """A JSON value."""
else:
    JSON = Any

JSONObject: TypeAlias = dict[str, JSON]
"""A JSON object: tool arguments, a structured tool result, a record of a state."""

State: TypeAlias = dict[str, JSON]
"""An environment's state: public attribute name -> JSON value (see docs/architecture.md)."""


class ParsedState(dict[str, Any]):
    """A state parsed from JSON text that keeps the text (UTF-8 bytes): what is handed on to another process
    (the validators) is then the bytes as read, not a fresh encoding. `json.loads` then `json.dumps` gives
    the same text back, so nothing changes for the reader; do not modify a ParsedState (the text would no
    longer match; a plain `dict(...)` copy is free to change)."""

    __slots__ = ("encoded",)

    def __init__(self, value: dict[str, Any], encoded: bytes) -> None:
        super().__init__(value)
        self.encoded = encoded


def parse_state(encoded: bytes, like: Any = None, decoded: str | None = None) -> ParsedState | None:
    """A ParsedState of JSON text, or None when the text is not a JSON object. `like`, a ParsedState of the very
    same text (a reference final state an agent's final state is expected to equal), is returned as it is,
    without parsing again. `decoded`: the same text as a str, when the caller has it (parsed instead of
    decoding `encoded` again: one copy of the text fewer while it is parsed)."""
    if isinstance(like, ParsedState) and like.encoded == encoded:
        return like
    value = json.loads(encoded if decoded is None else decoded)
    return ParsedState(value, encoded) if isinstance(value, dict) else None


_WS = re.compile(r"[ \t\n\r]*")


def _skip(text: str, i: int) -> int:
    """The index of the first non-whitespace character at or after `i`."""
    match = _WS.match(text, i)
    return match.end() if match else i


def object_keeping(text: str, key: str) -> dict[str, Any]:
    """`json.loads(text)` of a JSON object, where the value of `key` (when it is an object) comes back as a
    ParsedState holding its own text as it stands in `text`: handed on later (a state file, the validators), it
    is not encoded again. Each top-level value is decoded once, by the json module."""
    decoder = json.JSONDecoder()
    i = _skip(text, 0)
    if not text.startswith("{", i):
        raise ValueError("not a JSON object")
    out: dict[str, Any] = {}
    i = _skip(text, i + 1)
    if text.startswith("}", i):
        i += 1
    else:
        while True:
            if not text.startswith('"', i):
                raise ValueError(f"a key was expected at character {i}")
            name, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = _skip(text, i)
            if not text.startswith(":", i):
                raise ValueError(f"':' was expected at character {i}")
            i = _skip(text, i + 1)
            value, end = decoder.raw_decode(text, i)
            if name == key and isinstance(value, dict):
                value = ParsedState(value, text[i:end].encode("utf-8"))
            out[name] = value
            i = _skip(text, end)
            if text.startswith(",", i):
                i = _skip(text, i + 1)
                continue
            if text.startswith("}", i):
                i += 1
                break
            raise ValueError(f"',' or '}}' was expected at character {i}")
    if _skip(text, i) != len(text):
        raise ValueError(f"extra data at character {i}")
    return out


def encode_json(value: Any) -> bytes:
    """UTF-8 JSON text of `value` (`ensure_ascii=False`); a ParsedState's own bytes as they were read."""
    if isinstance(value, ParsedState):
        return value.encoded
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def valid_text(value: JSON) -> JSON:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD.

    A provider's JSON may hold an escaped lone surrogate (`"\\ud800"`), which Python decodes to a `str` that
    no UTF-8 writer accepts; model output is made valid text where it enters, so it can be checked, stored
    and scored like any other answer."""
    if isinstance(value, str):
        if value.isascii():  # no surrogate is ASCII: checked without a copy of the text
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, dict):
        return {str(valid_text(k)): valid_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [valid_text(v) for v in value]
    return value


class EncodedCache:
    """UTF-8 JSON text of values that are encoded again and again unchanged (a scenario's initial state, sent
    to a server and to the validators for every episode), remembered by identity for the last `size` values
    holding at most `max_bytes` of text between them (remembering keeps a value alive). Only for values nobody
    changes after handing them in: the cache never looks inside again. `size=0` remembers nothing."""

    def __init__(self, size: int = 256, max_bytes: int = 64 << 20) -> None:
        self._size = size
        self._max_bytes = max_bytes
        self._held = 0
        self._texts: OrderedDict[int, tuple[Any, bytes]] = OrderedDict()  # id -> (the value, kept alive; text)

    def __len__(self) -> int:
        """How many values are remembered (each kept alive by the cache)."""
        return len(self._texts)

    def encode(self, value: Any) -> bytes:
        """`json.dumps(value, ensure_ascii=False)` as UTF-8, from the cache when `value` was seen. A ParsedState
        has its text already: it is not remembered (a run reads each episode's state afresh, and remembering
        would keep every copy alive for the collector to walk)."""
        if isinstance(value, ParsedState):
            return value.encoded
        key = id(value)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is value:
            self._texts.move_to_end(key)
            return hit[1]
        text = encode_json(value)
        if self._size <= 0:
            return text
        if hit is not None:  # another value (now gone) had this id
            self._held -= len(self._texts.pop(key)[1])
        self._texts[key] = (value, text)
        self._held += len(text)
        while self._texts and (len(self._texts) > self._size or self._held > self._max_bytes):
            self._held -= len(self._texts.popitem(last=False)[1][1])
        return text


_initial_states = EncodedCache()


def initial_states() -> EncodedCache:
    """The process's one EncodedCache of initial states: a scenario's state is encoded once, whether it goes to
    a server (a state file, a request) or to the validators."""
    return _initial_states


__all__ = ["JSON", "EncodedCache", "JSONObject", "ParsedState", "State", "encode_json", "initial_states",
           "object_keeping", "parse_state", "valid_text"]
