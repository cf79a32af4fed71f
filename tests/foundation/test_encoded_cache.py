"""EncodedCache: the JSON text of a value handed in again and again, encoded once."""

from __future__ import annotations

import json

from envscaler_mcp._json import EncodedCache, ParsedState, encode_json, parse_state


def test_same_text_as_json_dumps_and_encoded_once() -> None:
    cache = EncodedCache(size=2)
    state = {"orders": {"O-1": {"note": "crème brûlée", "total": 12.5}}}
    first = cache.encode(state)
    assert first == json.dumps(state, ensure_ascii=False).encode("utf-8")
    assert cache.encode(state) is first  # the remembered bytes, not a new encoding
    assert cache.encode(dict(state)) is not first  # an equal but distinct object is encoded on its own


def test_least_recently_used_values_are_forgotten_and_size_zero_remembers_nothing() -> None:
    cache = EncodedCache(size=2)
    a, b, c = {"a": 1}, {"b": 2}, {"c": 3}
    text_a = cache.encode(a)
    cache.encode(b)
    cache.encode(c)  # a is the oldest: forgotten
    assert cache.encode(a) is not text_a and cache.encode(a) == text_a
    none = EncodedCache(size=0)
    assert none.encode(a) is not none.encode(a)


def test_a_parsed_state_is_handed_on_as_the_bytes_read() -> None:
    value = {"items": {"é1": {"price": 0.1 + 0.2, "tags": ["☕", None, True], "n": 10**20}}, "log": [], "x": -0.0}
    text = json.dumps(value, ensure_ascii=False).encode("utf-8")
    parsed = parse_state(text)
    assert parsed == value and encode_json(parsed) is text
    assert encode_json(dict(parsed)) == text  # a plain copy is encoded afresh, to the same text
    assert parse_state(b"[1, 2]") is None
    crafted = ParsedState({"a": 1}, b'{"a": 2}')  # what is sent is the text, not a new encoding
    assert encode_json(crafted) == b'{"a": 2}'
