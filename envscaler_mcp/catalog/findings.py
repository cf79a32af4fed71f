"""The findings an import keeps in an environment's provenance notes, grouped for `import` and `show`.

An imported environment's notes hold what the static checks found (refusals imported with `--skip-checks`,
and the warnings kept for third-party code the OS layers contain), the tools whose kind EnvScaler and our
analysis disagree on, the calls that make the environment nondeterministic, and other notes (a default
state that does not fit its schema, methods not exposed). Each group is printed as a count and its first
few notes; `verbose` prints them all.
"""

from __future__ import annotations

from envscaler_mcp.skeleton.models import Provenance

SHOWN = 3
GROUPS = (  # (title, the prefix or text that puts a note in the group)
    ("static-check refusal(s) (imported with --skip-checks)", "static check: "),
    ("static-check warning(s) (contained by the OS layers)", "static check (warning): "),
    ("tool-kind disagreement(s)", "static analysis says"),
    ("argument problem(s) in reference calls", "argument: "),
    ("nondeterministic call(s)", "determinism: "),
)


def grouped_notes(provenance: Provenance) -> list[tuple[str, list[str]]]:
    """(group title, its notes) for every group that has notes, in GROUPS order, then 'other note(s)'."""
    groups: dict[str, list[str]] = {}
    for note in provenance.notes:
        title = next((t for t, key in GROUPS if note.startswith(key) or (not key.endswith(" ") and key in note)),
                     "other note(s)")
        groups.setdefault(title, []).append(note)
    order = [t for t, _ in GROUPS] + ["other note(s)"]
    return [(t, groups[t]) for t in order if t in groups]


def findings_lines(provenance: Provenance, *, verbose: bool = False, indent: str = "  ") -> list[str]:
    """One line per group (`3 static-check warning(s) ...:`) and under it its first SHOWN notes (every one with
    `verbose`), with how many more there are. Empty when the provenance has no notes."""
    lines = []
    for title, notes in grouped_notes(provenance):
        lines.append(f"{indent}{len(notes)} {title}:")
        shown = notes if verbose else notes[:SHOWN]
        lines += [f"{indent}  - {note}" for note in shown]
        if len(shown) < len(notes):
            lines.append(f"{indent}  ... {len(notes) - len(shown)} more (--verbose shows all)")
    return lines
