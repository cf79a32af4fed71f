"""EncodedCache: the JSON text of a value handed in again and again, encoded once."""

from __future__ import annotations

import json

import pytest

from envscaler_mcp._json import EncodedCache, ParsedState, encode_json, object_keeping, parse_state


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


def test_the_cache_holds_at_most_its_bytes() -> None:
    cache = EncodedCache(size=100, max_bytes=1000)
    big = [{"k": "x" * 400} for _ in range(3)]
    texts = [cache.encode(v) for v in big]
    assert cache.encode(big[2]) is texts[2]  # the newest is kept
    assert cache.encode(big[0]) is not texts[0]  # the oldest went out when the third came in (3 x 410 > 1000)


def test_a_line_keeps_the_text_of_its_initial_state() -> None:
    line = '{"id": "sc-1", "initial_state": {"orders": {"O-1": {"note": "cr\\u00e8me", "n": [1, 2.5]}}}, "task": "}{"}'
    record = object_keeping(line, "initial_state")
    assert record == json.loads(line)
    state = record["initial_state"]
    assert isinstance(state, ParsedState) and encode_json(state) == line[32:-15].encode()
    assert json.loads(encode_json(state)) == state
    for bad in ("[1]", '{"a" 1}', '{"a": 1,}', '{"a": 1} x', '{"a": 1'):
        with pytest.raises(ValueError):
            object_keeping(bad, "a")


def test_a_state_equal_to_the_one_expected_is_not_parsed_again() -> None:
    expected = parse_state(b'{"a": {"b": [1, true]}}')
    assert expected is not None
    assert parse_state(b'{"a": {"b": [1, true]}}', like=expected) is expected
    other = parse_state(b'{"a": {"b": [1, 1]}}', like=expected)
    assert other is not expected and other == {"a": {"b": [1, 1]}}
    assert parse_state(b'{"a": 1}', like={"a": 1}) is not None  # only a ParsedState's text is trusted


def test_parsed_states_are_not_remembered() -> None:
    """A run reads each episode's state afresh: remembering every copy would keep them all alive."""
    import sys

    cache = EncodedCache(size=100)
    text = b'{"orders": {"O-1": {"total": 1}}}'
    parsed = parse_state(text)
    held = sys.getrefcount(parsed)
    assert cache.encode(parsed) is text
    assert sys.getrefcount(parsed) == held  # the cache keeps no reference to it
