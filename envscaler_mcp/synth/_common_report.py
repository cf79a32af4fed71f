"""What a synthesis command says at its end: the drop reasons counted, the files it wrote, how to resume.

A run that kept nothing must not look like a success: the commands end non-zero with the drops counted by
step and reason; they name only files that exist; an interrupted run says what is kept and the command that
continues it.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import typer

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.synth._common_progress import RunLog

NO_RESULT_EXIT = 1  # the run finished but kept nothing


def _shape(reason: str) -> str:
    """A reason with its numbers and quoted values blanked, so reasons that differ only there count together."""
    return re.sub(r"'[^']*'|\"[^\"]*\"|\d+(\.\d+)?", "#", reason)[:160]


def count_reasons(drops: Iterable[tuple[str, str]], limit: int = 8) -> list[str]:
    """'<step>: <n> × <reason>' lines, most frequent first, for (step, reason) pairs; reasons of one shape (the
    same words, other numbers or names) count together and are shown by their first instance."""
    counts: Counter[tuple[str, str]] = Counter()
    first: dict[tuple[str, str], str] = {}
    for step, reason in drops:
        key = (step, _shape(reason))
        counts[key] += 1
        first.setdefault(key, reason)
    lines = [f"{step}: {n} × {first[(step, shape)][:240]}" for (step, shape), n in counts.most_common(limit)]
    if len(counts) > limit:
        lines.append(f"… and {len(counts) - limit} other reason(s)")
    return lines


def read_drops(path: Path, step_key: str = "step") -> list[tuple[str, str]]:
    """(step, reason) of every record of a dropped.jsonl (none when the file does not exist)."""
    if not path.exists():
        return []
    return [(str(r.get(step_key, "?")), str(r.get("reason", ""))) for _, r in iter_jsonl(path, skip_torn_tail=True)
            if isinstance(r, dict)]


def existing(paths: Iterable[Path]) -> list[Path]:
    """The paths that exist (a command names only files it wrote)."""
    return [p for p in paths if p.exists()]


def resume_command(argv: Sequence[str] | None = None) -> str:
    """The command line that continues this run: the same arguments plus --resume."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--resume" not in args:
        args.append("--resume")
    return shlex.join(["envscaler-mcp", *args])


def fail_empty(what: str, drops: list[tuple[str, str]], log: RunLog | None = None) -> None:
    """End the command with NO_RESULT_EXIT: `what` (e.g. 'no scenario kept') and the drops counted."""
    lines = [f"error: {what}" + (f"; {len(drops)} item(s) dropped:" if drops else "")]
    lines += [f"  {line}" for line in count_reasons(drops)]
    for line in lines:
        typer.secho(line, fg=typer.colors.RED, err=True)
        if log is not None:
            log.line(line, echo=False)
    raise typer.Exit(NO_RESULT_EXIT)
