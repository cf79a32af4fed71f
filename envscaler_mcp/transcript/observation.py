"""The observation check: what the reference solution's read-only calls revealed must be among what the agent's
own calls returned, turn by turn.

A checklist over the final state credits an agent that never looks anything up (it cannot tell the user what
they asked, yet the state is right). This check asks, for each turn, that every informative result of the
reference's read-only calls in that turn is found among the results of the agent's calls in the same turn:
order-free, extra calls allowed, any tool (the agent may find a record with another query than the
reference's).

Calls are transcript call records (transcript/record.py): `{"name", "arguments", "result", "is_error"}`.

* The information of a result: a JSON object without its `success` and `message` keys (a message is a
  sentence for the model, not data), reduced to its `data` value when that is all that is left; any other
  JSON value as it is; a text that is not JSON, stripped. None, empty containers and empty texts carry no
  information (an empty search result says nothing an unrelated empty result does not).
* What must be observed (units): each object of an information that is a list of objects (a search result:
  record by record), otherwise the information as a whole.
* Matching: values are normalised (object key order is ignored, `2` and `2.0` are one number, `True` is not
  `1`; list order counts). An object unit is observed when some object anywhere inside an agent's result
  equals it (a record looked up alone is also observed inside a list the agent got); any other unit when an
  agent's result's information equals it. Error results of the agent observe nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

ObservationStatus = Literal["passed", "failed", "not_applicable"]
_UNINFORMATIVE_KEYS = frozenset({"success", "message"})
_SHOWN = 160  # characters of a value shown in evidence


class ObservationVerdict(BaseModel):
    """The observation check of one episode."""

    status: ObservationStatus = Field(
        "not_applicable",
        description="'passed': every informative result of the reference's read-only calls was among the agent's "
        "results in its turn; 'failed' (see evidence); 'not_applicable' (see reason).",
    )
    reason: str = Field("", description="Why the check does not apply (not_applicable).")
    required: int = Field(0, description="Reference results (records of a list counted one by one) to observe.")
    observed: int = Field(0, description="Of those, how many the agent's results held.")
    evidence: list[str] = Field(
        default_factory=list, description="Each reference result the agent did not observe: turn, call, value.")


@dataclass
class ObservationTurn:
    """One user turn: the reference's calls (with their results) and the agent's calls in that turn."""

    reference: list[dict[str, Any]]
    agent: list[dict[str, Any]]
    skip: set[int] = field(default_factory=set)  # reference calls (0-based) whose results vary between replays


def normalise(value: Any) -> Any:
    """A hashable canonical form of a JSON value: object key order ignored, integral floats as ints."""
    kind = type(value)  # parsed JSON's own types first: a type test costs less than an isinstance of an ABC
    if kind is str or kind is int:
        return value
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        return ("{}", tuple(sorted((str(k), normalise(v)) for k, v in value.items())))
    if kind is list or isinstance(value, list | tuple):
        return ("[]", tuple(normalise(v) for v in value))
    if isinstance(value, bool):
        return ("bool", value)  # True == 1 in Python: kept apart
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return int(value) if isinstance(value, float) and value.is_integer() else value
    return str(value)


def information(result: Any) -> Any:
    """The information a result carries (see the module doc); None when it carries none."""
    if isinstance(result, str):
        value: Any = result.strip()
    elif isinstance(result, Mapping):
        rest = {k: v for k, v in result.items() if k not in _UNINFORMATIVE_KEYS}
        value = rest["data"] if set(rest) == {"data"} else rest
    else:
        value = result
    return None if value is None or (isinstance(value, str | list | dict) and not value) else value


def units(info: Any) -> list[Any]:
    """What must be observed of one result's information: each object of a list of objects, else the whole."""
    if isinstance(info, list) and all(isinstance(v, Mapping) for v in info):
        return [v for v in info if v]
    return [info]


def _indexed(value: Any, objects: set[Any]) -> Any:
    """`normalise(value)`, adding the normalised form of every object inside the JSON value (itself included) to
    `objects`. One walk: each nested object is normalised once, and its form reused by the objects around it."""
    kind = type(value)
    if kind is str or kind is int:
        return value
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        form = ("{}", tuple(sorted((str(k), _indexed(v, objects)) for k, v in value.items())))
        objects.add(form)
        return form
    if isinstance(value, list):
        return ("[]", tuple(_indexed(v, objects) for v in value))
    return normalise(value)


class _Seen:
    """What the agent's calls of one turn returned, indexed for matching."""

    def __init__(self, calls: Sequence[dict[str, Any]]) -> None:
        self.objects: set[Any] = set()
        self.wholes = {_indexed(information(c.get("result")), self.objects) for c in calls if not c.get("is_error")}

    def holds(self, unit: Any) -> bool:
        key = normalise(unit)
        return key in self.objects if isinstance(unit, Mapping) else key in self.wholes


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def check_observation(turns: Sequence[ObservationTurn], read_only: Collection[str] | None = None
                      ) -> ObservationVerdict:
    """The observation check over `turns`. `read_only`: the tools whose results must be observed (None: every
    reference call's). Reference calls that failed are skipped (a reference that passed the gate has none)."""
    required = observed = 0
    evidence: list[str] = []
    for t, turn in enumerate(turns, start=1):
        seen = _Seen(turn.agent)
        for n, call in enumerate(turn.reference):
            if n in turn.skip or call.get("is_error") or (read_only is not None and call["name"] not in read_only):
                continue
            info = information(call.get("result"))
            if info is None:
                continue
            parts = units(info)
            for k, unit in enumerate(parts, start=1):
                required += 1
                if seen.holds(unit):
                    observed += 1
                    continue
                which = f"record {k} of {len(parts)} " if len(parts) > 1 else ""
                evidence.append(f"turn {t}, reference call {n + 1} {call['name']}({_show(call.get('arguments', {}))}): "
                                f"{which}{_show(unit)} is not among the results of the agent's "
                                f"{len(turn.agent)} call(s) in that turn")
    if required == 0:
        what = "read-only " if read_only is not None else ""
        return ObservationVerdict(reason=f"no {what}call of the reference solution returns information to observe")
    return ObservationVerdict(status="passed" if observed == required else "failed", required=required,
                              observed=observed, evidence=evidence)
