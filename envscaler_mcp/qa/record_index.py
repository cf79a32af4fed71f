"""What the grounding questions (qa/grounding.py) read of a state and of a task, worked out once.

* `StateIndex`: a state's keyed collections, each record's values listed once, with the values (and words) that
  only one record of its collection holds. The consistency step asks several questions of one initial state
  (records named by value, by key, two names side by side, calls the task did not ask for), and each used to
  list and count every record's values again. The scenarios the gate takes one after the other mostly share
  their records (an environment's scenarios differ in a few), so a collection's index is built like the last one
  of that name (`Records(records, like)`): the records equal byte for byte (marshal) are not listed again and
  the maps are patched with the ones that differ, with the answers of an index built afresh
  (tests/qa/test_record_index.py). The last few such indexes are kept, up to `_KEPT_RECORDS` records in all.
* `Text`: a lower-cased task with every span `mentions` could find in it, so that the thousands of values of a
  state are each looked up in a set instead of searched for in the text.

`mentions(text, value)`: `value` occurs in `text` with no word character or '-' on either side; a span of a
`Text` is text[i:j] where i is 0 or follows such a character and j is the end or comes before one, so a value
up to `_SPAN_MAX` characters long is mentioned exactly when its lower-cased form is one of the spans.
"""

from __future__ import annotations

import marshal
import re
from bisect import bisect_right
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any, TypeVar

MIN_VALUE = 3  # shorter values ("A", "12") are not taken as naming a record
_SPAN_MAX = 64  # values up to this long are looked up among a Text's spans; longer ones are searched for
_WORD = re.compile(r"[^\W\d_]{4,}")
_T = TypeVar("_T")
_CACHED_VALUE = 128  # longer values are free text too (`words_of`); the cache holds at most 16,384 short ones
_LABEL_WORDS = 6  # a value of more words is free text: its words do not name its record


def keyed(state: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level attributes that map keys to records (dicts)."""
    return {name: value for name, value in state.items()
            if isinstance(value, dict) and value and all(isinstance(r, dict) for r in value.values())}


def every_text(value: Any) -> Iterator[str]:
    """Every key and scalar value of a state (or any part of one), at any depth, as text."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from every_text(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from every_text(inner)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values of `value`, at any depth (not the keys of its dicts)."""
    if isinstance(value, dict):
        for inner in value.values():
            yield from leaves(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from leaves(inner)
    else:
        yield value


def strings_of(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, value) for the record's string and number values, nested lists of them included."""
    found = []
    for field, value in record.items():
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                found.append((field, str(item)))
    return found


def _joins(char: str) -> bool:
    """A character that continues a word or an id (regex \\w, or '-')."""
    return char.isalnum() or char in "_-"


def mentions(text: str, value: str) -> bool:
    """`value` (lower-cased) occurs in `text` with no word character or '-' on either side."""
    return next(positions(text, value), None) is not None


def positions(text: str, value: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each occurrence of `value` (lower-cased) in `text` with no word character or '-' on either
    side. A substring search: a regex compiled per value overflowed re's cache on catalogs of thousands of values."""
    needle = value.lower()
    start = text.find(needle)
    while start != -1:
        end = start + len(needle)
        if (start == 0 or not _joins(text[start - 1])) and (end == len(text) or not _joins(text[end])):
            yield start, end
        start = text.find(needle, start + 1)


def words_of(value: str) -> frozenset[str]:
    """The words (4 letters or more, lower-cased) of a value that names something: a name, a title, a label of
    at most `_LABEL_WORDS` words. A longer value is free text (a note, a description), whose words say little
    about which record is meant: "back" of a return's note "Approved: item received back in resellable
    condition." named that return in the 1.5B model's task "I need to manage orders and returns in the back
    office of an online shop", which names nothing."""
    if len(value) > _CACHED_VALUE or len(value.split()) > _LABEL_WORDS:  # any whitespace: a note over lines too
        return frozenset()
    return _short_words(value)


@lru_cache(maxsize=1 << 14)
def _short_words(value: str) -> frozenset[str]:
    """`words_of` a short value, remembered: the scenarios of an environment share most of their values."""
    return frozenset(_WORD.findall(value.lower()))


class Text:
    """A task, lower-cased, with its spans (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = t = text.lower()
        ends = [j for j in range(1, len(t) + 1) if j == len(t) or not _joins(t[j])]
        self.spans: set[str] = set()
        for i in range(len(t)):
            if i == 0 or not _joins(t[i - 1]):
                first = bisect_right(ends, i)
                self.spans.update(t[i:j] for j in ends[first:bisect_right(ends, i + _SPAN_MAX, first)])

    def mentions(self, value: str) -> bool:
        """`mentions(self.text, value)`."""
        needle = value.lower()
        return needle in self.spans if 0 < len(needle) <= _SPAN_MAX else mentions(self.text, needle)


@lru_cache(maxsize=8)
def text_of(task: str) -> Text:
    """The task's Text (the consistency step asks about one text several times)."""
    return Text(task)


def _dumped(records: Mapping[str, Any]) -> dict[str, bytes]:
    """Each record's bytes (marshal: 1, 1.0 and True, which are equal in Python but listed as "1", "1.0" and not at
    all, differ, as do the orders of fields); {} when a record cannot be written (nothing is then reused)."""
    try:
        return dict(zip(records, map(marshal.dumps, records.values()), strict=True))
    except (ValueError, TypeError):
        return {}


def _patched(index: dict[str, list[_T]], gone: set[str], drop: Iterable[str], add: Iterable[tuple[str, _T]],
             key: Callable[[_T], str]) -> dict[str, list[_T]]:
    """A copy of `index` (name -> entries) without the entries of the `gone` records under the names in `drop`, and
    with `add` appended. The lists of `index` are never changed: the Records it came from still reads them."""
    out = dict(index)
    for name in drop:
        left = [entry for entry in out.get(name, ()) if key(entry) not in gone]
        if left:
            out[name] = left
        else:
            out.pop(name, None)
    for name, entry in add:
        out[name] = [*out.get(name, ()), entry]
    return out


class Records:
    """One keyed collection with each record's values listed once, and the values only one record holds.

    Built `like` the index of another state's collection (the scenarios of an environment share most of their
    records), what it listed of the records both hold unchanged (byte for byte: `_dumped`) is taken from it, and its maps
    are patched with the records that differ; the answers are those of an index built afresh."""

    def __init__(self, records: Mapping[str, Any], like: Records | None = None) -> None:
        self.records = records
        self._bytes = _dumped(records)
        old = like.records if like is not None else {}
        kept = {key for key, _ in self._bytes.items() & like._bytes.items()} if like is not None else set()
        if like is None or 2 * len(kept) < len(records):
            like, kept = None, set()
        # (field, value) pairs and values of each record: a kept record's are the other index's
        self._held: dict[str, frozenset[tuple[str, str]]] = {
            key: like._held[key] if like is not None and key in kept else frozenset(strings_of(record))
            for key, record in records.items()}
        self.values: dict[str, set[str]] = {
            key: like.values[key] if like is not None and key in kept else {value for _, value in held}
            for key, held in self._held.items()}
        if like is None:
            self._counts = Counter(chain.from_iterable(self._held.values()))
        else:
            self._counts = like._counts.copy()
            gone = [like._held[key] for key in old if key not in kept]
            for held in gone:
                self._counts.subtract(held)
            for key in records.keys() - kept:
                self._counts.update(self._held[key])
            for held in gone:
                for pair in held:
                    if not self._counts[pair]:
                        del self._counts[pair]
        # the whole values that only one record has in their field (a date, a name, a title)
        self.whole = {value for (_, value), n in self._counts.items() if n == 1 and len(value) >= MIN_VALUE}
        self._words: dict[str, set[str]] | None = None
        self._distinct: set[str] | None = None
        self._by_lowered: tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]] | None = None
        self._word_keys: tuple[dict[str, list[str]], list[str]] | None = None
        # what the lazy maps below take from `like` (not `like` itself: no chain of indexes is kept alive)
        self._like = None if like is None else _Like(old.keys() - kept, records.keys() - kept, like.values,
                                                     like._words, like._by_lowered, like._word_keys)

    def words(self, key: str) -> set[str]:
        """The words (4 letters or more) of the record's values."""
        return self._word_map()[key]

    def _word_map(self) -> dict[str, set[str]]:
        if self._words is None:
            like = self._like
            known, new = (like.words, like.new) if like is not None and like.words is not None else ({}, set())
            self._words = {k: known[k] if k in known and k not in new else {w for v in values for w in words_of(v)}
                           for k, values in self.values.items()}
        return self._words

    @property
    def distinct(self) -> set[str]:
        """The whole values only one record has, and the words (4 letters or more) that only one record's values
        contain ("Moreno" of "Dr. Elena Moreno")."""
        if self._distinct is None:
            words = Counter(chain.from_iterable(self._word_map().values()))
            self._distinct = self.whole | {word for word, n in words.items() if n == 1}
        return self._distinct

    def named(self, text: Text, kind: str) -> set[Any]:
        """The records the text names by what only they hold. Kinds: "whole" (their keys: a whole value only that
        record has), "own" (their keys: also a word only that record's values contain), "values" ((value, key)
        pairs: the values only that record has, other than its key)."""
        short, long = self._lowered()
        accept = self.whole if kind == "whole" else self.distinct
        found: set[Any] = set()
        for span in text.spans & short.keys():
            for value, key in short[span]:
                if value in accept and not (kind == "values" and span == key.lower()):
                    found.add((value, key) if kind == "values" else key)
        for value, key in long:
            if value in accept and not (kind == "values" and value.lower() == key.lower()) and text.mentions(value):
                found.add((value, key) if kind == "values" else key)
        if kind == "own":
            by_word, long_words = self._by_word()
            found.update(key for word in text.spans & by_word.keys() if word in accept for key in by_word[word])
            found.update(key for word in long_words if word in accept and text.mentions(word) for key in by_word[word])
        return found

    def _lowered(self) -> tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]]:
        """Each record's values by their lower-cased form (value, key), and the values too long to be spans."""
        if self._by_lowered is None:
            like = self._like
            if like is not None and like.lowered is not None:  # patched: only the records that differ are listed
                gone = like.gone
                old_short, old_long = like.lowered
                short = _patched(old_short, gone, (v.lower() for k in gone for v in like.values[k]),
                                 ((v.lower(), (v, k)) for k in like.new for v in self.values[k]
                                  if 0 < len(v.lower()) <= _SPAN_MAX), key=itemgetter(1))
                long = [entry for entry in old_long if entry[1] not in gone]
                long += [(v, k) for k in like.new for v in self.values[k] if not 0 < len(v.lower()) <= _SPAN_MAX]
            else:
                short, long = {}, []
                for key, values in self.values.items():
                    for value in values:
                        lowered = value.lower()
                        if 0 < len(lowered) <= _SPAN_MAX:
                            short.setdefault(lowered, []).append((value, key))
                        else:
                            long.append((value, key))
            self._by_lowered = short, long
        return self._by_lowered

    def _by_word(self) -> tuple[dict[str, list[str]], list[str]]:
        """The keys of the records whose values contain each word, and the words too long to be spans."""
        if self._word_keys is None:
            like = self._like
            if like is not None and like.word_keys is not None and like.words is not None:
                gone = like.gone
                by_word = _patched(like.word_keys[0], gone, (w for k in gone for w in like.words[k]),
                                   ((w, k) for k in like.new for w in self.words(k)), key=lambda k: k)
                long_words = {w for w in like.word_keys[1] if w in by_word}
                long_words.update(w for k in like.new for w in self.words(k) if len(w) > _SPAN_MAX)
                self._word_keys = by_word, list(long_words)
            else:
                by_word = {}
                for key in self.values:
                    for word in self.words(key):
                        by_word.setdefault(word, []).append(key)
                self._word_keys = by_word, [word for word in by_word if len(word) > _SPAN_MAX]
        return self._word_keys


class _Like:
    """What a Records takes from the index it was built like: the keys of the records that differ (`gone`: the
    other's, `new`: its own) and the other's maps as they were then."""

    def __init__(self, gone: set[str], new: set[str], values: dict[str, set[str]], words: dict[str, set[str]] | None,
                 lowered: tuple[dict[str, list[tuple[str, str]]], list[tuple[str, str]]] | None,
                 word_keys: tuple[dict[str, list[str]], list[str]] | None) -> None:
        self.gone, self.new, self.values, self.words, self.lowered, self.word_keys = (
            gone, new, values, words, lowered, word_keys)


_KEPT = 8  # collections whose index the next state's index of that name is built like
_KEPT_RECORDS = 5_000  # and their records in all (they are the states of scenarios already done: memory)
_recent: OrderedDict[str, Records] = OrderedDict()


def _built(name: str, records: Mapping[str, Any]) -> Records:
    """The index of a collection, built like the last one of that name; kept for the next while it is small."""
    index = Records(records, _recent.pop(name, None))
    if len(records) <= _KEPT_RECORDS:
        _recent[name] = index
        while len(_recent) > _KEPT or sum(len(r.records) for r in _recent.values()) > _KEPT_RECORDS:
            _recent.popitem(last=False)
    return index


class StateIndex:
    """A state's keyed collections, each indexed (`Records`) when first asked for, and the keys a text names
    (qa/grounding.py asks that of every collection several times)."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = state
        self.names = keyed(state)
        self._indexed: dict[str, Records] = {}
        self.keys_named: dict[tuple[str, str], set[str]] = {}  # (lower-cased text, collection) -> keys

    def __getitem__(self, name: str) -> Records:
        if name not in self._indexed:
            self._indexed[name] = _built(name, self.names[name])
        return self._indexed[name]


def index_of(state: Mapping[str, Any] | StateIndex) -> StateIndex:
    """The state's index (itself when it is one)."""
    return state if isinstance(state, StateIndex) else StateIndex(state)
