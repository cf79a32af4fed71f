"""Whether a text *asserts* a fact it mentions: not negated, not offered as one of several values, and (for
facts asked together) stated about the same thing.

`says` finds where a fact is mentioned (transcript/facts.py); this module judges each mention by the
statement and the clause around it:

* negated: a negation cue earlier in its clause (`not`, `n't`, `never`, `no`, `no longer`, `neither`, `nor`,
  `nothing`, `cannot`, `instead of`, `rather than`, `other than`, `except`): "has not shipped", "(not
  $119.85)". A cue reaches to the end of its clause only, so "not yet delivered, but shipped" asserts
  `shipped`;
* hedged: a hedge cue earlier in its clause (`maybe`, `perhaps`, `possibly`, `probably`, `likely`, `might`,
  `not sure`, `I think` ...), a statement that ends in a question mark, a date followed by a range of days
  ("March 14-16"), a text fact joined to another word by `or` / `/` ("FedEx or UPS"), or a number, date,
  time or id in a run of values of its kind joined by `or` or `/` (numbers also by `to`, a dash or
  `between ... and`), introduced by `one of`, or in a run of four or more (more than the call asks for); a
  unit may follow each value (see `_link`);
* not bound (facts of one `says` call): the stretch of text from the first mention to the last (and, for
  ids, the clauses it touches; for dates and times, those clauses or, across statements, the statements
  whole) may state no other value of a kind the call asks for, unless that value is negated or the old value of a change ("from June
  24 to June 20"); ids compare by shape (`INC-3048` competes with `INC-3040`, not with `FE2026031410046`).
  A stretch that starts with a non-id fact may not follow another id of the asked shape in its statement
  ("INC-3048, due ..., is assigned to Tariq Aziz, and INC-3040 ...").

Standard library only (imported in the validator worker).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from envscaler_mcp.transcript.facts import Span, fact_spans

_ABBREV = "".join(rf"(?<!\b{a})" for a in ("Dr", "Mr", "Ms", "Mrs", "St", "Prof", "Jr", "Sr", "vs", "e.g", "i.e",
                                          "etc", "approx", "Inc", "Ltd", "Co"))
_STATEMENT = re.compile(_ABBREV + r"[.!?]+(?=\s|$)|[;\n]")
_CLAUSE = re.compile(
    _STATEMENT.pattern + r"|[,:()\[\]\u2014\u2013]|\s-\s|\b(?:and|but|however|although|though|because|since|so|"
    r"while|whereas|which|who|until|unless|then|once|when|whenever|if|after|before|where)\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:not(?!\s+only\b)|never|no(?!\s+one\b)|neither|nor|nothing|cannot)\b|n['\u2019]t\b"
    # these deny only what directly follows them: "instead of June 24 you'd pay 65.00" asserts 65.00
    r"|\b(?:instead\s+of|rather\s+than|other\s+than|except)\s+(?:the\s+|a\s+)?(?:[$\u20ac\u00a3]\s*)?$",
    re.IGNORECASE)
_HEDGE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|likely|might|unsure|uncertain|not\s+sure|could\s+be|"
                    r"or\s+so|roughly|approximately|somewhere|I\s+(?:think|believe|guess|assume|suppose))\b",
                    re.IGNORECASE)
_OR_AFTER = re.compile(r"\s*,?\s*(?:and\s*/\s*or|or|nor|/)(?![\w])", re.IGNORECASE)
_DAY_RANGE = re.compile(r"\s*[-\u2013\u2014]\s*\d{1,2}(?!\d)")  # "March 14-16": a range of days
_QUESTION = re.compile(r"\?+\s*$")
_OR_BEFORE = re.compile(r"(?:\b(?:or|nor|either)|/)\s*(?:[A-Z][a-z]{0,3}\.\s*)?$", re.IGNORECASE)
_GAP_TOKEN = re.compile(r"[A-Za-z]+|[,/\-\u2013\u2014]|[^\s$\u20ac\u00a3%]")
_ALTERNATIVE = {"or", "nor", "/", "maybe", "perhaps", "possibly", "either"}
_RANGE = {"to", "through", "until", "-", "\u2013", "\u2014"}  # between numbers; "from June 24 to June 20" is a change
_LINK = _ALTERNATIVE | _RANGE | {"and", ",", "even"}
_BETWEEN = re.compile(r"\bbetween\s*(?:[$\u20ac\u00a3]|US\$)?\s*$", re.IGNORECASE)
_ONE_OF = re.compile(r"\b(?:one|any|either)\s+of(?:\s+these|\s+the\s+following)?\s*:?\s*(?:[$\u20ac\u00a3])?\s*$",
                     re.IGNORECASE)
_FROM = re.compile(r"\bfrom\s+$", re.IGNORECASE)
_TO = re.compile(r"\s+to\b", re.IGNORECASE)
LIST_LENGTH = 4  # a run of this many values of one kind is a list of candidates (unless that many are asked)
VALUE_KINDS = ("number", "date", "time", "id")


class Fact(Protocol):
    """What a fact looks like to this module (transcript_checks._Fact)."""

    kind: str
    key: Any
    label: str


@dataclass(frozen=True)
class Reading:
    """A text cut into statements and clauses (boundaries inside a fact, like the comma of `4,798,512`, are
    not boundaries), with its fact spans."""

    text: str
    spans: tuple[Span, ...]
    statements: tuple[int, ...]  # start of each statement after the first
    clauses: tuple[int, ...]  # start of each clause after the first

    def statement(self, pos: int) -> int:
        return bisect.bisect_right(self.statements, pos)

    def statement_range(self, index: int) -> tuple[int, int]:
        start = self.statements[index - 1] if index else 0
        end = self.statements[index] if index < len(self.statements) else len(self.text)
        return start, end

    def clause_range(self, pos: int) -> tuple[int, int]:
        k = bisect.bisect_right(self.clauses, pos)
        return (self.clauses[k - 1] if k else 0), (self.clauses[k] if k < len(self.clauses) else len(self.text))


@lru_cache(maxsize=8)
def reading(text: str) -> Reading:
    """The statements, clauses and facts of `text`."""
    spans = tuple(fact_spans(text))
    inside = bytearray(len(text) + 1)
    for s in spans:
        inside[s.start:s.end] = b"\x01" * (s.end - s.start)

    def starts(pattern: re.Pattern[str]) -> tuple[int, ...]:
        return tuple(sorted({m.end() for m in pattern.finditer(text) if not inside[m.start()]}))

    return Reading(text, spans, starts(_STATEMENT), starts(_CLAUSE))


def shape(text: str) -> str:
    """An id's shape: letter runs as `A`, digit runs as `9`, separators kept (`INC-3048` -> `A-9`)."""
    return re.sub(r"\d+", "9", re.sub(r"[A-Za-z]+", "A", text))


def denial(r: Reading, start: int, end: int, fact: Fact, asked: int) -> str | None:
    """Why the mention text[start:end] of `fact` does not assert it ('negated', 'hedged', ...), or None.
    `asked`: how many facts of this kind the call asks for."""
    clause_start = r.clause_range(start)[0]
    before = r.text[clause_start:start]
    if _NEGATION.search(before):
        return "negated"
    if _HEDGE.search(before):
        return "hedged"
    if _QUESTION.search(r.text, *r.statement_range(r.statement(start))):
        return "asked as a question"
    if fact.kind == "date" and _DAY_RANGE.match(r.text, end):
        return "given as a range"
    if fact.kind == "text":
        if _OR_AFTER.match(r.text, end) or _OR_BEFORE.search(r.text[max(0, start - 40):start]):
            return "offered with an alternative"
        return None
    return _in_run(r, start, fact.kind, asked)


def _in_run(r: Reading, start: int, kind: str, asked: int) -> str | None:
    """Whether the value at `start` is one of a run of values of its kind: alternatives, a range, a list."""
    spans = r.spans
    at = next((k for k, s in enumerate(spans) if s.start == start and s.kind == kind), None)
    if at is None:  # an id written with spaces ("o 10053") is no single span
        return None
    lo = hi = at
    links: set[str] = set()
    while lo > 0 and spans[lo - 1].kind == kind and (gap := _link(r.text[spans[lo - 1].end:spans[lo].start])):
        links |= gap
        lo -= 1
    while hi + 1 < len(spans) and spans[hi + 1].kind == kind and (gap := _link(r.text[spans[hi].end:spans[hi + 1].start])):
        links |= gap
        hi += 1
    n = hi - lo + 1
    lead = r.text[max(0, spans[lo].start - 40):spans[lo].start]
    if n >= 2 and links & _ALTERNATIVE:
        return f"offered as one of {n} alternatives"
    if n >= 2 and kind == "number" and links & _RANGE:
        return "given as a range"
    if n >= 2 and "and" in links and _BETWEEN.search(lead):
        return "given as a range"
    if _ONE_OF.search(lead) or (n >= LIST_LENGTH and n > asked):
        return f"one of a list of {n} candidates"
    return None


def _link(gap: str) -> set[str] | None:
    """The link words of the text between two values if it only joins them ("or", ", ", " to ", "and", a unit
    after the first value), else None. A unit is a word of up to five letters ("18 days or 21", "5 KB, 6 KB"),
    or any word before an alternative or a range ("18 minutes or 21 minutes"); a longer word before a comma or
    `and` names another thing ("2 orders, 3 coupons, 4 returns and 5 refunds" is no list of candidates)."""
    tokens = [t.lower() for t in _GAP_TOKEN.findall(gap)]
    if tokens and tokens[0] not in _LINK and tokens[0].isalpha() and (
            len(tokens[0]) <= 5 or not (_ALTERNATIVE | _RANGE).isdisjoint(tokens[1:])):
        tokens = tokens[1:]
    if not all(t in _LINK for t in tokens):
        return None
    return set(tokens)


def _competes(span: Span, group: Sequence[Fact]) -> bool:
    """Whether `span` states another value of a kind the group asks for."""
    for fact in group:
        if fact.kind != span.kind or fact.kind not in VALUE_KINDS:
            continue
        if fact.kind == "id":
            if shape(span.text) == shape(fact.label) and fact.key not in span.keys:
                return True
        elif not _same_value(fact, span):
            return True
    return False


def _same_value(fact: Fact, span: Span) -> bool:
    if fact.kind != "date":
        return bool(fact.key & span.keys)
    return any(w[1:] == f[1:] and (w[0] is None or f[0] is None or w[0] == f[0]) for w in fact.key for f in span.keys)


def unbound(r: Reading, group: Sequence[Fact], mentions: Sequence[Sequence[tuple[int, int]]]) -> str | None:
    """None when some choice of one asserted mention per fact states them together (see the module docstring),
    else why not. `mentions[i]`: the asserted mentions of `group[i]`."""
    why = "they are never stated together"
    for choice in itertools.product(*(m[:6] for m in mentions)):
        reason = _apart(r, group, choice)
        if reason is None:
            return None
        why = reason
    return why


def _set_aside(r: Reading, span: Span) -> bool:
    """A value that does not compete: negated ("not 2026-04-08"), or the old value of a change ("from June 24
    to June 20")."""
    if _NEGATION.search(r.text[r.clause_range(span.start)[0]:span.start]):
        return True
    return bool(_FROM.search(r.text, max(0, span.start - 8), span.start)) and bool(_TO.match(r.text, span.end))


def _aside(text: str, span: Span, choice: Sequence[tuple[int, int]]) -> bool:
    """A value in parentheses that hold none of the chosen mentions ("O-1001 (2 items at $10.00 ...) totals
    $25.50"): a breakdown beside the statement, not a rival value."""
    left = text.rfind("(", 0, span.start)
    right = text.find(")", span.end)
    if left < 0 or right < 0 or ")" in text[left:span.start] or "(" in text[span.end:right]:
        return False
    return not any(left < s < right for s, _ in choice)


def _apart(r: Reading, group: Sequence[Fact], choice: Sequence[tuple[int, int]]) -> str | None:
    start, end = min(s for s, _ in choice), max(e for _, e in choice)
    first, last = r.statement(start), r.statement(end - 1)
    chosen = set(choice)
    clauses = (r.clause_range(start)[0], r.clause_range(end - 1)[1])
    # across statements a rival date or time counts anywhere in them, a rival id only in the clauses touched
    # (the next clause may begin a new subject: "WELCOME15 is valid. It saves $7.50, and SPRING10 saves $5.00")
    statements = (r.statement_range(first)[0], r.statement_range(last)[1]) if last > first else clauses
    for span in r.spans:
        if (span.start, span.end) in chosen or not _competes(span, group) or _set_aside(r, span) \
                or _aside(r.text, span, choice):
            continue
        region = clauses if span.kind == "id" else statements
        inside = start <= span.start < end
        if inside or (region[0] <= span.start < region[1] and span.kind != "number"):
            return f"{span.text!r} stands between them"
    ids = [f for f in group if f.kind == "id"]
    lead = min(range(len(choice)), key=lambda k: choice[k][0])
    if ids and group[lead].kind != "id":
        s_start = r.statement_range(first)[0]
        before = [s for s in r.spans if s.kind == "id" and s_start <= s.start and s.end <= start]
        if before and _competes(before[-1], ids):
            return f"what follows {before[-1].text!r} is about it"
    return None
