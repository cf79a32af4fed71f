"""The grounding questions' index (qa/record_index.py): a Text's spans find what the word-boundary search finds,
and one StateIndex answers every question as the state itself does."""

from __future__ import annotations

import random
from typing import Any

import pytest

from envscaler_mcp.qa import record_index
from envscaler_mcp.qa.grounding import contradicting_names, keys_named, named_records, records_named
from envscaler_mcp.qa.record_index import Records, StateIndex, Text, mentions

STATE = {
    "users": {"U01": {"name": "Ben Okoro", "plan": "free", "tags": ["vip", "early-adopter"]},
              "U08": {"name": "Priya Nair", "plan": "standard", "tags": ["vip"]},
              "U09": {"name": "Ana Lima", "plan": "standard", "bio": "Collects first editions of " + "x" * 70}},
    "plans": {"free": {"price": 0}, "standard": {"price": 12.5}},
}


def test_a_value_is_one_of_the_spans_exactly_when_the_search_finds_it() -> None:
    rng = random.Random(3)
    alphabet = ["a", "b", "ab", "-", "_", " ", ".", "1", "É", "(", ")", "x" * 70]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        assert Text(text).mentions(value) is mentions(text.lower(), value), (text, value)
    # the cases the search is there for: inside a word, joined by '-' or '_', a value longer than any span
    assert not Text("Please clamp the shelf").mentions("lamp")
    assert not Text("a lamp-proof shelf").mentions("lamp") and not Text("lamp_1").mentions("lamp")
    assert Text("(Lamp).").mentions("LAMP")
    long = "a value of " + "y" * 80
    assert Text(f"see {long}.").mentions(long) and not Text(f"see {long}s").mentions(long)


def test_one_index_answers_as_the_state_does() -> None:
    index = StateIndex(STATE)
    for task in ("Ben Okoro (U08) wants the standard plan.", "Move U01 to the plan 'standard'.",
                 "Ana Lima collects first editions of " + "x" * 70 + ".", "Nothing named here.", "The VIP Priya."):
        for question in (named_records, records_named, keys_named, contradicting_names):
            assert question(index, task) == question(STATE, task), (question.__name__, task)
    assert contradicting_names(index, "Ben Okoro (U08) wants the standard plan.") == [
        ("users", "Ben Okoro", "U08", "U01")]
    assert records_named(index, "Ana Lima collects first editions of " + "x" * 70 + ".") == {"users": {"U09"}}
    assert named_records(index, "Priya asked.") == {("users", "U08")}  # a word only her values contain


def _varied_states(seed: int, steps: int) -> list[dict[str, dict[str, Any]]]:
    """A collection changed a little from one state to the next: a field's value (1 -> 1.0 -> True too), a record
    added, removed, replaced, or its fields reordered."""
    rng = random.Random(seed)
    words = ["Okoro", "Nair", "Lima", "Moreno", "standard", "free", "vip", "early-adopter", "Ana", "Ben Okoro",
             "Collects first editions of " + "x" * 70, "2024-05-01", "U01"]
    scalars: list[Any] = [1, 1.0, True, 0, 12.5, "1", None]

    def record() -> dict[str, Any]:
        out: dict[str, Any] = {"name": rng.choice(words), "n": rng.choice(scalars)}
        if rng.random() < 0.5:
            out["tags"] = [rng.choice(words + scalars) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.3:
            out["bio"] = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        return out

    state = {f"U{i:02d}": record() for i in range(12)}
    states = [state]
    for _ in range(steps):
        state = {key: dict(rec) for key, rec in state.items()}
        for _ in range(rng.randint(0, 3)):
            key = rng.choice(sorted(state))
            move = rng.choice(["value", "type", "add", "remove", "replace", "reorder"])
            if move == "value":
                state[key]["name"] = rng.choice(words)
            elif move == "type":
                state[key]["n"] = rng.choice([1, 1.0, True])
                if "tags" in state[key]:
                    state[key]["tags"] = [rng.choice([1, 1.0, True]) for _ in state[key]["tags"]]
            elif move == "add":
                state[f"N{rng.randint(0, 99)}"] = record()
            elif move == "remove" and len(state) > 2:
                del state[key]
            elif move == "replace":
                state[key] = record()
            else:
                state[key] = dict(reversed(list(state[key].items())))
        states.append(state)
    return states


def _maps(records: Records) -> tuple[Any, ...]:
    short, long = records._lowered()
    by_word, long_words = records._by_word()
    return (records.values, records.whole, records.distinct, {k: sorted(v) for k, v in short.items()}, sorted(long),
            {k: sorted(v) for k, v in by_word.items()}, sorted(long_words))


def test_an_index_built_like_another_states_answers_as_one_built_afresh() -> None:
    reused = 0
    for seed in range(40):
        states = _varied_states(seed, 12)
        rng = random.Random(seed)
        previous: Records | None = None
        for state in states:
            fresh, like = Records(state), Records(state, previous)
            reused += like._like is not None
            assert all(like._counts.values())  # no pair of a record gone is left counted at 0
            texts = [" ".join(rng.choice([*map(str, state), "Ben Okoro", "Nair", "U01 (Ana)", "x" * 70, "vip"])
                              for _ in range(rng.randint(1, 5))) for _ in range(4)]
            for text in texts:
                for kind in ("whole", "own", "values"):
                    assert like.named(Text(text), kind) == fresh.named(Text(text), kind), (seed, text, kind)
            if rng.random() < 0.7:  # the next is built like this one, its maps listed or not yet
                assert _maps(like) == _maps(fresh), seed
            previous = like
    assert reused > 200  # the like path is what ran, not the fresh one


def test_a_value_equal_in_python_but_of_another_type_is_listed_anew() -> None:
    one = Records({"a": {"n": 1, "tags": [2]}})
    one._lowered()
    as_float = Records({"a": {"n": 1.0, "tags": [2.0]}}, one)
    assert as_float.values == {"a": {"1.0", "2.0"}}
    assert Records({"a": {"n": True, "tags": [2]}}, one).values == {"a": {"2"}}


def test_the_state_index_of_the_next_scenario_answers_as_one_built_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = ("Ben Okoro (U01) wants the standard plan.", "Nair and U03.", "U02, Ana Lima", "The VIP Moreno.")
    record_index._recent.clear()
    kept = []
    for state in _varied_states(7, 30):
        full = {"users": state, "plans": STATE["plans"]}
        index = StateIndex(full)  # built like the last state's (the module keeps it)
        kept.append(all(index[name]._like is not None for name in index.names) if len(kept) else True)
        with monkeypatch.context() as m:
            m.setattr(record_index, "_recent", record_index.OrderedDict())
            m.setattr(record_index, "_KEPT", 0)
            fresh = StateIndex(full)
            for task in tasks:
                for question in (named_records, records_named, keys_named, contradicting_names):
                    assert question(index, task) == question(fresh, task), (question.__name__, task)
            assert not any(fresh[name]._like for name in fresh.names)
    assert sum(kept) > 20
