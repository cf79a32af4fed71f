"""The grounding questions' index (qa/record_index.py): a Text's spans find what the word-boundary search finds,
and one StateIndex answers every question as the state itself does."""

from __future__ import annotations

import random

from envscaler_mcp.qa.grounding import contradicting_names, keys_named, named_records, records_named
from envscaler_mcp.qa.record_index import StateIndex, Text, mentions

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
