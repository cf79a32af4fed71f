"""Finding the facts a text states: numbers and amounts, dates, times and ids, each normalised.

`fact_spans(text)` lists every fact in a text with its normalised keys and a mutated variant (the same text
with one digit changed), which the QA gate uses to check that transcript validators notice a wrong value.
A fact is found only as a whole token: `24` is not a fact of `2400`, `R-5240`, `24.5` or `2026-03-24`.

Standard library only (imported in the validator worker).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
    "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
    "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}
# Number words a text may state a count with; "one" is left out (mostly a pronoun: "the next one").
NUMBER_WORDS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split()) if w != "one"}

_MONTH = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = (r"(?:(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|wed|thurs|thur|thu|"
            r"fri|sat|sun)\.?,?\s+)?")
_ORD = r"(?:st|nd|rd|th)?"
_DATES = [
    re.compile(r"(?<![\w/.-])(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)(?![-/]\d)"),
    re.compile(r"(?<![\w/.-])(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"),
    re.compile(r"(?<![\w/.-])(?P<a>\d{1,2})(?P<sep>[/.])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})(?!\d)"),
    re.compile(r"(?<!\w)" + _WEEKDAY + _MONTH + r"\s+(?P<d>\d{1,2})(?!\d)" + _ORD + r"(?:,?\s+(?P<y>\d{4}))?(?!\w)",
               re.IGNORECASE),
    re.compile(r"(?<!\w)" + _WEEKDAY + r"(?P<d>\d{1,2})(?!\d)" + _ORD + r"\s+(?:of\s+)?" + _MONTH
               + r",?(?:\s+(?P<y>\d{4}))?(?!\w)", re.IGNORECASE),
]
_AMPM = r"(?:\s*(?P<ap>[ap])\.?\s?m\.?(?![a-z]))"
_TIMES = [
    re.compile(r"(?<![\d:.])(?P<h>\d{1,2}):(?P<mi>[0-5]\d)(?::[0-5]\d)?" + _AMPM + r"?(?![\d:])", re.IGNORECASE),
    re.compile(r"(?<![\w:.])(?P<h>\d{1,2})" + _AMPM, re.IGNORECASE),
]
_ID = re.compile(r"(?<![\w./-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*"
                 r"(?![\w-])")
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)", re.IGNORECASE)
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_WORD = re.compile(r"(?<![\w-])(?:" + "|".join(NUMBER_WORDS) + r")(?![\w-])", re.IGNORECASE)
_CURRENCY = r"(?:[$€£]|US\$|(?:USD|EUR|GBP)\s?)?"
_NUMBER_FACT = re.compile(_CURRENCY + r"\s*(?P<n>" + _NUMBER.pattern + r")\s*(?:%|[$€£]|USD|EUR|GBP|dollars?|euros?)?",
                          re.IGNORECASE)


@dataclass(frozen=True)
class Span:
    """One fact found in a text: where, what kind, its normalised keys, and a variant with one digit changed."""

    start: int
    end: int
    kind: str  # "number" | "date" | "time" | "id"
    keys: frozenset[Any]
    text: str
    mutated: str


def _bump(digits: str, high: int) -> str:
    """Another value for a run of digits (one more, or one less when that would pass `high`), same width."""
    n = int(digits)
    return str(n + 1 if n + 1 <= high else n - 1).zfill(len(digits))


def _date_keys(y: str | None, m: int, d: int) -> frozenset[Any]:
    try:
        dt.date(int(y) if y else 2000, m, d)  # 2000: a leap year, so 29 February without a year is valid
    except ValueError:
        return frozenset()
    return frozenset({(int(y) if y else None, m, d)})


def _date_match(match: re.Match[str]) -> tuple[frozenset[Any], tuple[int, int]]:
    """(keys, span of the day digits) of a date match; keys empty when it is not a real date."""
    g = match.groupdict()
    if g.get("a"):  # 05/03/2026: month/day or day/month
        a, b = int(g["a"]), int(g["b"])
        keys = _date_keys(g["y"], a, b) | _date_keys(g["y"], b, a)
        return keys, match.span("b")
    month = MONTHS[g["mon"].lower()] if g.get("mon") else int(g["m"])
    return _date_keys(g.get("y"), month, int(g["d"])), match.span("d")


def _hour(match: re.Match[str]) -> int | None:
    h, ap = int(match["h"]), (match["ap"] or "").lower()
    if ap:
        if not 1 <= h <= 12:
            return None
        return (h % 12) + (12 if ap == "p" else 0)
    return h if h <= 23 else None


def _time_keys(match: re.Match[str]) -> frozenset[Any]:
    hour = _hour(match)
    minute = int(match.groupdict().get("mi") or 0)
    return frozenset() if hour is None else frozenset({(hour, minute)})


def _number_ok(text: str, start: int, end: int) -> bool:
    """A number token only when it is not part of a longer token (an id, a version, a range)."""
    before = text[start - 1] if start else " "
    if before.isalnum() or before in "._":
        return False
    if before in "-/" and start >= 2 and text[start - 2].isalnum():
        return False
    after = text[end] if end < len(text) else " "
    if after.isalpha():  # a unit: 12GB, 3x, 5th
        run = re.match(r"[A-Za-z]*", text[end:])
        letters = run[0] if run else ""
        tail = text[end + len(letters) :][:1] or " "
        return 0 < len(letters) <= 5 and not (tail.isdigit() or tail in "-_")
    return not (after in "-/_." and end + 1 < len(text) and text[end + 1].isalnum())


def _last_digit_span(token: str, stop: str = ".") -> tuple[int, int]:
    head = token.split(stop)[0]
    positions = [i for i, ch in enumerate(head) if ch.isdigit()]
    return positions[-1], positions[-1] + 1


def fact_spans(text: str) -> list[Span]:
    """Every date, time, id and number stated in `text`, in order of position (no two overlap)."""
    return list(_spans(text))


@lru_cache(maxsize=8)  # one answer is searched by every item of a checklist
def _spans(text: str) -> tuple[Span, ...]:
    taken = bytearray(len(text))
    spans: list[Span] = []

    def add(start: int, end: int, kind: str, keys: frozenset[Any], edit: tuple[int, int], new: str) -> None:
        if not keys or any(taken[start:end]):
            return
        taken[start:end] = b"\x01" * (end - start)
        mutated = text[start:edit[0]] + new + text[edit[1]:end]
        spans.append(Span(start, end, kind, keys, text[start:end], mutated))

    for pattern in _DATES:
        for m in pattern.finditer(text):
            keys, (ds, de) = _date_match(m)
            add(m.start(), m.end(), "date", keys, (ds, de), _bump(text[ds:de], 28))
    for pattern in _TIMES:
        for m in pattern.finditer(text):
            hs, he = m.span("h")
            add(m.start(), m.end(), "time", _time_keys(m), (hs, he), _bump(text[hs:he], 11))
    for m in _ID.finditer(text):
        token = m[0]
        if _ORDINAL.fullmatch(token):
            continue
        i, j = _last_digit_span(token, stop="\0")
        key = re.sub(r"[-_]", "", token).upper()
        add(m.start(), m.end(), "id", frozenset({key}), (m.start() + i, m.start() + j),
            str((int(token[i]) + 1) % 10))
    for m in _NUMBER.finditer(text):
        if not _number_ok(text, m.start(), m.end()):
            continue
        i, j = _last_digit_span(m[0])
        add(m.start(), m.end(), "number", frozenset({_decimal(m[0])}), (m.start() + i, m.start() + j),
            str((int(m[0][i]) + 1) % 10))
    for m in _WORD.finditer(text):
        n = NUMBER_WORDS[m[0].lower()]
        words = list(NUMBER_WORDS)  # in order of value
        k = words.index(m[0].lower())
        other = words[k + 1] if k + 1 < len(words) else words[k - 1]
        add(m.start(), m.end(), "number", frozenset({Decimal(n)}), m.span(), other)
    spans.sort(key=lambda s: s.start)
    return tuple(spans)


def _decimal(token: str) -> Decimal:
    return Decimal(token.replace(",", "")).normalize()


def parse_date(text: str) -> frozenset[Any] | None:
    """The keys {(year or None, month, day)} of a text that is exactly one date, else None."""
    for pattern in _DATES:
        m = pattern.fullmatch(text)
        if m:
            return _date_match(m)[0] or None
    return None


def parse_time(text: str) -> frozenset[Any] | None:
    """The keys {(hour, minute)} of a text that is exactly one time of day, else None."""
    for pattern in _TIMES:
        m = pattern.fullmatch(text)
        if m:
            return _time_keys(m) or None
    return None


def parse_number(text: str) -> frozenset[Any] | None:
    """The keys {Decimal} of a text that is exactly one number or amount ('$1,024.50', '24 USD'), else None."""
    m = _NUMBER_FACT.fullmatch(text)
    if not m:
        return None
    try:
        return frozenset({_decimal(m["n"])})
    except InvalidOperation:
        return None
