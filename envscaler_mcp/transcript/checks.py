"""Helpers for transcript validators: `from transcript_checks import says, called, not_called, not_says`.

A transcript item's validator defines `def check_func(transcript) -> bool`, where `transcript` is plain data:

    {"calls": [{"name": str, "arguments": dict, "result": <JSON value or text>, "is_error": bool}, ...],
     "answer": str,            # the agent's final answer
     "told_user": [str, ...],  # every text the agent wrote (in conversation mode: what the user was told)
     "success_convention": str}  # optional: how the environment reports a failed call (default "envscaler")

A call succeeded when it is not an error result and its result reports no error under that convention
(envscaler_mcp/_outcome.py: `"success": true` for EnvScaler-style environments).

`says` matches facts after normalisation, never as raw substrings: numbers and amounts (`24`, `24.0`,
`$24.00`, `24.00 USD`, `1,024.50`), dates (`2026-03-05`, `March 5, 2026`, `5 Mar 2026`, `Thursday, March 5`),
times (`14:30`, `2:30 PM`), ids (case, dashes, underscores and spaces ignored) and other text as whole words.
`24` is not found in `2400`, `R-5240` or `24.5`. Each helper records evidence (what matched, or what was
missing); the sandbox returns it with the verdict.

Standard library only: the validator worker imports this module before its limits apply.
"""

from __future__ import annotations

import datetime as _dt
import json as _json
import re as _re
from collections.abc import Sequence
from decimal import Decimal as _Decimal
from typing import Any

from envscaler_mcp._outcome import CONVENTIONS, DEFAULT_CONVENTION, call_succeeded
from envscaler_mcp.transcript.claims import denial, reading, unbound
from envscaler_mcp.transcript.evidence import note
from envscaler_mcp.transcript.facts import (
    NUMBER_WORDS,
    Span,
    fact_spans,
    parse_date,
    parse_number,
    parse_time,
)

__all__ = ["called", "not_called", "not_says", "says"]  # what validators see (the sandbox exposes only these)

_ID_FACT = _re.compile(r"[A-Za-z0-9]+(?:[-_ /][A-Za-z0-9]+)*")


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else _json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- facts


class _Fact:
    """A fact a validator looks for, normalised: kind 'number' | 'date' | 'time' | 'id' | 'text'."""

    def __init__(self, value: Any) -> None:
        self.label = str(value)
        self.kind, self.key = self._classify(value)

    @staticmethod
    def _classify(value: Any) -> tuple[str, Any]:
        if isinstance(value, bool) or value is None:
            raise TypeError(f"a fact must be a number, a date or a text, not {value!r}")
        if isinstance(value, int | float | _Decimal):
            return "number", frozenset({_Decimal(str(value)).normalize()})
        if isinstance(value, _dt.date):  # datetime too: its date
            return "date", frozenset({(value.year, value.month, value.day)})
        if not isinstance(value, str):
            raise TypeError(f"a fact must be a number, a date or a text, not {type(value).__name__}")
        text = " ".join(value.split())
        if not text:
            raise ValueError("a fact must not be empty")
        for kind, parse in (("date", parse_date), ("time", parse_time), ("number", parse_number)):
            key = parse(text)
            if key is not None:
                return kind, key
        if text.lower() in NUMBER_WORDS:
            return "number", frozenset({_Decimal(NUMBER_WORDS[text.lower()])})
        if _ID_FACT.fullmatch(text) and _re.search(r"\d", text) and _re.search(r"[A-Za-z]", text):
            return "id", _re.sub(r"[-_ /]", "", text).upper()
        return "text", text.casefold()

    def find(self, text: str, spans: Sequence[Span]) -> tuple[int, int] | None:
        """Where the fact is first stated in `text` (start, end), or None."""
        found = self.find_all(text, spans)
        return found[0] if found else None

    def find_all(self, text: str, spans: Sequence[Span]) -> list[tuple[int, int]]:
        """Every place the fact is mentioned in `text`, in order."""
        if self.kind in ("number", "date", "time"):
            return [(s.start, s.end) for s in spans if s.kind == self.kind and _same_key(self.kind, self.key, s.keys)]
        if self.kind == "id":
            parts = [_re.escape(ch) for ch in self.key]
            pattern = r"(?<![A-Za-z0-9])" + r"[-_ /]?".join(parts) + r"(?![A-Za-z0-9])(?![-_/][A-Za-z0-9])"
        else:
            words = [_re.escape(w) for w in self.key.split(" ")]
            pattern = r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"
        return [m.span() for m in _re.finditer(pattern, text, _re.IGNORECASE)]


def _same_key(kind: str, wanted: frozenset[Any], found: frozenset[Any]) -> bool:
    if kind != "date":
        return bool(wanted & found)
    # A date stated (or asked for) without its year matches on month and day.
    return any(w[1:] == f[1:] and (w[0] is None or f[0] is None or w[0] == f[0]) for w in wanted for f in found)


def _sentence(text: str, start: int, end: int) -> str:
    """The sentence (or line) around text[start:end]."""
    left = max(text.rfind(". ", 0, start), text.rfind("\n", 0, start), text.rfind("! ", 0, start),
               text.rfind("? ", 0, start))
    left = 0 if left < 0 else left + 1
    rights = [i for i in (text.find(". ", end), text.find("\n", end), text.find("! ", end),
                          text.find("? ", end)) if i >= 0]
    right = min(rights) + 1 if rights else len(text)
    return _short(text[left:right].strip(), 200)


def _texts(transcript: Any, where: str) -> tuple[str, str]:
    """(text to search, what to call it in evidence)."""
    data = transcript if isinstance(transcript, dict) else {}
    answer = data.get("answer") or ""
    told = [t for t in (data.get("told_user") or []) if isinstance(t, str)]
    if where == "answer":
        return (answer if isinstance(answer, str) else ""), "the answer"
    if where == "told_user":
        return "\n".join(told), "what the agent told the user"
    if where == "any":
        return "\n".join([answer if isinstance(answer, str) else "", *told]), "the agent's messages"
    raise ValueError(f"where must be 'answer', 'told_user' or 'any', not {where!r}")


def _candidates(text: str, facts: tuple[Any, ...]) -> dict[str, int]:
    """Kinds of fact (number, date, time) the text states so many different values of that it names
    candidates rather than an answer: {kind: how many}. The bound is `MAX_CANDIDATES`, or four per fact of
    that kind asked for, whichever is larger."""
    asked: dict[str, int] = {}
    for value in facts:
        kind = _Fact(value).kind
        asked[kind] = asked.get(kind, 0) + 1
    seen: dict[str, set[frozenset[Any]]] = {}
    for span in fact_spans(text):
        if span.kind in asked:
            seen.setdefault(span.kind, set()).add(span.keys)
    return {kind: len(keys) for kind, keys in seen.items() if len(keys) > max(MAX_CANDIDATES, 4 * asked[kind])}


MAX_CANDIDATES = 30


def says(transcript: Any, *facts: Any, where: str = "answer") -> bool:
    """True when the agent's answer (`where="told_user"`: anything it told the user; `"any"`: either) asserts
    every fact. Facts are numbers, amounts, dates, times, ids or words, matched after normalisation.

    A mention does not assert its fact when it is negated ("has not shipped", "(not $119.85)"), hedged
    ("maybe", "FedEx or UPS", "$119.85 or $129.85", "between $110 and $120") or one of a list of candidates;
    the facts of one call must be stated together, about one thing (transcript/claims.py). A text that states
    more than `MAX_CANDIDATES` different numbers (or dates, or times; at least four per fact of that kind
    asked for) states none of them."""
    if not facts:
        raise TypeError("says() needs at least one fact")
    text, name = _texts(transcript, where)
    r = reading(text)
    group = [_Fact(value) for value in facts]
    asked = {kind: sum(f.kind == kind for f in group) for kind in {f.kind for f in group}}
    shotgun = _candidates(text, facts)
    asserted: list[list[tuple[int, int]]] = []
    ok = True
    for fact in group:
        mentions = fact.find_all(text, r.spans)
        judged = [(m, denial(r, *m, fact, asked[fact.kind])) for m in mentions]
        good = [m for m, why in judged if why is None]
        asserted.append(good)
        if not mentions:
            shown = f"\u00ab{_short(text)}\u00bb" if text.strip() else "(empty)"
            note(f"missing {fact.label!r} in {name}: {shown}")
        elif fact.kind in shotgun:
            note(f"not counted {fact.label!r}: {name} states {shotgun[fact.kind]} different {fact.kind}s, "
                  "a list of candidates rather than an answer")
        elif not good:
            (start, end), why = judged[0]
            note(f"not counted {fact.label!r}: {why}: \u00ab{_sentence(text, start, end)}\u00bb")
        else:
            note(f"stated {fact.label!r}: \u00ab{_sentence(text, *good[0])}\u00bb")
            continue
        ok = False
    if ok and len(group) > 1:
        apart = unbound(r, group, asserted)
        if apart is not None:
            labels = ", ".join(repr(f.label) for f in group)
            note(f"not counted {labels}: not stated together about one thing ({apart})")
            return False
    return ok


def not_says(transcript: Any, *facts: Any, where: str = "answer") -> bool:
    """True when none of the facts is stated (e.g. a wrong amount, a promise the agent must not make). A
    negated mention ("not Dr. Rahman") does not state its fact; a hedged one ("Nakamura or Rahman") does."""
    if not facts:
        raise TypeError("not_says() needs at least one fact")
    text, name = _texts(transcript, where)
    r = reading(text)
    ok = True
    for value in facts:
        fact = _Fact(value)
        stating = [m for m in fact.find_all(text, r.spans) if denial(r, *m, fact, 1) != "negated"]
        if stating:
            ok = False
            note(f"stated {fact.label!r}, which it must not: \u00ab{_sentence(text, *stating[0])}\u00bb")
        else:
            note(f"did not state {fact.label!r} in {name}")
    return ok


def stated(text: str, fact: Any) -> bool:
    """Whether `text` states `fact` (the matching `says` does), without recording evidence. For callers
    outside the sandbox; validators use `says`."""
    return _Fact(fact).find(text, fact_spans(text)) is not None


# ---------------------------------------------------------------- calls


def _same(actual: Any, expected: Any) -> bool:
    """Argument equality: callables are predicates; texts ignore case and surrounding space; numbers compare
    by value; lists and objects element by element."""
    if callable(expected):
        try:
            return bool(expected(actual))
        except Exception:
            return False
    if isinstance(expected, str) and isinstance(actual, str):
        return actual.strip().casefold() == expected.strip().casefold()
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return actual == expected
    if isinstance(expected, list) and isinstance(actual, list):
        return len(actual) == len(expected) and all(_same(a, e) for a, e in zip(actual, expected, strict=True))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return actual.keys() == expected.keys() and all(_same(actual[k], v) for k, v in expected.items())
    return bool(actual == expected)


def _succeeded(call: dict[str, Any]) -> bool:
    """The call succeeded under its environment's convention (_outcome.py), which `_calls` puts on each call."""
    convention = call.get("_convention")
    return call_succeeded(call.get("result"), bool(call.get("is_error")),
                          convention if convention in CONVENTIONS else DEFAULT_CONVENTION)


def _calls(transcript: Any) -> list[dict[str, Any]]:
    data = transcript if isinstance(transcript, dict) else {}
    convention = data.get("success_convention", DEFAULT_CONVENTION)
    return [{**c, "_convention": convention} for c in (data.get("calls") or []) if isinstance(c, dict)]


def _matches(call: dict[str, Any], tool: str, key_args: dict[str, Any]) -> bool:
    if call.get("name") != tool:
        return False
    args = call.get("arguments")
    if not isinstance(args, dict):
        args = {}
    return all(k in args and _same(args[k], v) for k, v in key_args.items())


def _describe_call(n: int, call: dict[str, Any]) -> str:
    outcome = "ok" if _succeeded(call) else "failed"
    return f"call {n} {call.get('name')}({_short(call.get('arguments') or {}, 160)}) {outcome}"


def _wanted(tool: str, key_args: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={'<predicate>' if callable(v) else _short(v, 60)}" for k, v in key_args.items())
    return f"{tool}({shown})"


def called(transcript: Any, tool: str, *, ok: bool = True, **key_args: Any) -> bool:
    """True when the agent called `tool` with (at least) these argument values; with `ok=True` (default) the
    call must also have succeeded (not an error result, no error under the environment's convention: for
    EnvScaler-style environments `"success": true`); `ok=False` counts any attempt.
    An argument value may be a predicate: `called(t, "search", query=lambda q: "lamp" in q.lower())`."""
    calls = _calls(transcript)
    for n, call in enumerate(calls, start=1):
        if _matches(call, tool, key_args) and (not ok or _succeeded(call)):
            note(_describe_call(n, call))
            return True
    same_tool = [(n, c) for n, c in enumerate(calls, start=1) if c.get("name") == tool]
    what = "successful call" if ok else "call"
    if same_tool:
        tried = "; ".join(_describe_call(n, c) for n, c in same_tool[:3])
        note(f"no {what} {_wanted(tool, key_args)}; calls to {tool}: {tried}")
    else:
        note(f"no {what} {_wanted(tool, key_args)}; {tool} was never called ({len(calls)} calls in all)")
    return False


def not_called(transcript: Any, tool: str, **key_args: Any) -> bool:
    """True when no call of `tool` with these argument values was made (any attempt counts, even a failed one)."""
    for n, call in enumerate(_calls(transcript), start=1):
        if _matches(call, tool, key_args):
            note(f"{_describe_call(n, call)}, which it must not")
            return False
    note(f"no call {_wanted(tool, key_args)}")
    return True
