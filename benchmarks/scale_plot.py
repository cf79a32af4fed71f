"""A log-log line plot as a standalone SVG (no plotting library): one panel per measure, one line per command."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
W, H, PAD = 360, 260, 48


def _panel(rows: list[dict[str, Any]], key: str, title: str, left: int) -> list[str]:
    rows = [r for r in rows if r.get(key)]
    points = [(r["n"], r[key]) for r in rows]
    if not points:
        return []
    xs = sorted({x for x, _ in points})
    lo_y = 10 ** math.floor(math.log10(min(y for _, y in points)))
    hi_y = 10 ** math.ceil(math.log10(max(y for _, y in points)))
    hi_y = hi_y * 10 if hi_y == lo_y else hi_y
    lo_x, hi_x = math.log10(min(xs)), math.log10(max(xs)) if len(xs) > 1 else math.log10(min(xs)) + 1

    def px(x: float) -> float:
        return left + PAD + (math.log10(x) - lo_x) / (hi_x - lo_x) * (W - 2 * PAD)

    def py(y: float) -> float:
        return H - PAD - (math.log10(y) - math.log10(lo_y)) / (math.log10(hi_y) - math.log10(lo_y)) * (H - 2 * PAD)

    out = [f'<text x="{left + W / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
           f'<rect x="{left + PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" fill="none" stroke="#999"/>']
    for x in xs:
        out.append(f'<text x="{px(x):.1f}" y="{H - PAD + 16}" text-anchor="middle" font-size="11">{x}</text>')
    decade = lo_y
    while decade <= hi_y:
        out.append(f'<text x="{left + PAD - 4}" y="{py(decade) + 4:.1f}" text-anchor="end" font-size="11">'
                   f'{decade:g}</text>')
        out.append(f'<line x1="{left + PAD}" x2="{left + W - PAD}" y1="{py(decade):.1f}" y2="{py(decade):.1f}" '
                   'stroke="#eee"/>')
        decade *= 10
    out.append(f'<text x="{left + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">environments</text>')
    commands = list(dict.fromkeys(r["command"] for r in rows))
    for i, command in enumerate(commands):
        line = sorted((r["n"], r[key]) for r in rows if r["command"] == command)
        if not line:
            continue
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in line)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        x, y = line[-1]
        out.append(f'<text x="{px(x) - 4:.1f}" y="{py(y) - 5:.1f}" text-anchor="end" font-size="11" '
                   f'fill="{colour}">{command}</text>')
    return out


def write_svg(rows: list[dict[str, Any]], path: Path) -> None:
    """Write wall time (s), CPU time (s) and peak memory of the process tree (MB) against environments, log-log.

    Wall time: the command from start to exit. CPU time: user + system of the command and every process it
    waited for. Memory (benchmarks/tree_memory.py): the peak PSS summed over the command and its descendants
    (a page shared by k processes counts 1/k in each: what the command costs the machine) when every row has
    it; rows of earlier runs have only the peak RSS summed over the tree, which counts a page shared by forked
    processes once per process (an upper bound), and the panel says which it shows."""
    pss = all("peak_tree_pss_mb" in r for r in rows)
    memory = _panel(rows, "peak_tree_pss_mb", "peak PSS summed over the process tree (MB)", 2 * W) if pss else \
        _panel(rows, "peak_tree_mb", "peak RSS summed over the process tree (MB)", 2 * W)
    parts = _panel(rows, "wall_s", "wall time (s)", 0) + _panel(rows, "cpu_s", "CPU time (s)", W) + memory
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * W}" height="{H}" font-family="sans-serif">'
           '<rect width="100%" height="100%" fill="white"/>' + "".join(parts) + "</svg>\n")
    Path(path).write_text(svg, encoding="utf-8")
