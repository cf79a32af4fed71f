"""The ways a task's prose may name a value of a record, beyond the value itself.

A recast (`recast.py`) swaps a record's own values where the text has them whole; the text may name them in other
forms: a part of a name ("this is Marta" for "Marta Lindqvist"), a date written out ("April 7", "7th of April"
for "2026-04-07T09:15:00"), a time ("9:15"), an amount ("112.00" for 112.0). `forms` gives each form as a
pattern, keyed by a canonical string so that the forms two values share can be told apart from the ones only
one of them has.
"""

from __future__ import annotations

import calendar
import re
from typing import Any

from envscaler_mcp.qa.record_index import leaves

MIN_VALUE = 4  # a whole value shorter than this is never looked for in text ("P2", "yes")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_TIME = re.compile(r"(?<!\d)(\d{2}):(\d{2})")
_PROPER = re.compile(r"(?<![\w-])[A-Z][^\W\d_]{2,}")  # a capitalised word of a value: a part of a name


def word(value: str) -> re.Pattern[str]:
    """`value` as a word of its own (`O-2003`, not `O-20031`; `Bob Chen`, not `Bob Chenko`)."""
    return re.compile(rf"(?<![\w-]){re.escape(value)}(?![\w-])")


def forms(value: Any) -> dict[str, re.Pattern[str]]:
    """The forms in which prose may name `value` (canonical string -> pattern); {} for a value no prose names
    reliably (booleans, None, whole numbers under 10, short strings with no part of a name)."""
    if isinstance(value, bool) or value is None:
        return {}
    if isinstance(value, int | float):
        return _amounts(float(value))
    if not isinstance(value, str):
        return {}
    found = {value: word(value)} if len(value) >= MIN_VALUE else {}
    found |= {part: re.compile(rf"(?<![\w-]){re.escape(part)}(?![\w-])") for part in _PROPER.findall(value)}
    if (day := _ISO.match(value)) is not None:
        found |= _dates(int(day.group(2)), int(day.group(3)))
        found[day.group(0)] = word(day.group(0))
    for hours, minutes in _TIME.findall(value):
        for text in {f"{hours}:{minutes}", f"{int(hours)}:{minutes}"}:
            found[text] = re.compile(rf"(?<![\d:]){re.escape(text)}(?![\d:])")
    return found


def _amounts(number: float) -> dict[str, re.Pattern[str]]:
    whole = number.is_integer()
    if whole and abs(number) < 10:  # a count ("2 tickets"): too common to tell the record by
        return {}
    texts = {f"{number:.2f}", repr(number)} | ({str(int(number))} if whole else set())
    return {f"#{number!r}:{text}": re.compile(rf"(?<![\d.,]){re.escape(text)}(?!\d|[.,]\d)") for text in texts}


def _dates(month: int, day: int) -> dict[str, re.Pattern[str]]:
    """A month and day written out: "April 7", "Apr. 7th", "7 April", "7th of April"."""
    if not 1 <= month <= 12:
        return {}
    names = f"(?i:{calendar.month_name[month]}|{calendar.month_abbr[month]}\\.?)"
    nth = rf"{day}(?:st|nd|rd|th)?"
    return {f"@{month}-{day}": re.compile(rf"(?<!\w){names}\s+{nth}(?!\d)|(?<![\w-]){nth}\s+(?:of\s+)?{names}(?!\w)")}


def still_named(old: dict[str, Any], new: dict[str, Any], text: str) -> str | None:
    """A form of a value of `old` (nested ones included: an item's name in a list of items) that `text` has and
    `new`'s value of that field has not (what a text made about `new` would still say of `old`), or None."""
    for key, value in old.items():
        theirs = {canonical for leaf in leaves(new.get(key)) for canonical in forms(leaf)}
        for leaf in leaves(value):
            for canonical, pattern in forms(leaf).items():
                if canonical not in theirs and pattern.search(text):
                    return f"{key} {leaf!r}"
    return None


def mentions(text: str, record: dict[str, Any]) -> bool:
    """Whether `text` names a text value of `record` in one of its forms."""
    return any(p.search(text) for value in record.values() if isinstance(value, str) for p in forms(value).values())
