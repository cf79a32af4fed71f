"""EncodedCache: the JSON text of a value handed in again and again, encoded once."""

from __future__ import annotations

import json

from envscaler_mcp._json import EncodedCache


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
