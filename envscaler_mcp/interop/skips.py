"""What an import left out, and why: one record per left-out item (or group of items), summed up by reason.

An import goes on past a bad item: an environment whose code cannot be used, scenarios of an env_id that is
not in the env file, an item of a trajectory file that is not a trajectory, a trajectory the replay does not
verify. Each becomes a `Skipped` with a short reason (the group it is counted in) and the full line that names
the item; `summary_lines` gives the count per kind and reason, so a reader sees at once what was lost.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NUMBERS = re.compile(r"\d+")
_PLURAL = {"trajectory": "trajectory(ies)"}


@dataclass(frozen=True)
class Skipped:
    """Items left out of an import: `count` items of `kind` ('environment', 'scenario', 'trajectory'), for
    `reason` (short, shared by similar items), with the line that names them."""

    kind: str
    reason: str
    line: str
    count: int = 1


def reason_group(reason: str) -> str:
    """A reason with its numbers blanked (`message 3 is not an object` -> `message N is not an object`), so
    that items that fail alike are counted together."""
    return _NUMBERS.sub("N", reason)


def summary_lines(skips: Iterable[Skipped]) -> list[str]:
    """`skipped N item(s):` then one line per kind and reason, largest first (nothing when nothing was
    skipped)."""
    groups: dict[tuple[str, str], int] = {}
    for skip in skips:
        groups[(skip.kind, skip.reason)] = groups.get((skip.kind, skip.reason), 0) + skip.count
    if not groups:
        return []
    total = sum(groups.values())
    lines = [f"skipped {total} item(s):"]
    for (kind, reason), count in sorted(groups.items(), key=lambda g: (-g[1], g[0])):
        lines.append(f"  {count} {_PLURAL.get(kind, kind + '(s)')}: {reason}")
    return lines
