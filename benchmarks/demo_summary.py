"""Side-by-side numbers of finished `eval` runs of the local model (e.g. the README's demo before and after a
change): successes, agent turns, first-turn times cold and warm, seconds per agent turn, prompt tokens read
and taken from the cache.

    python benchmarks/demo_summary.py RUN_DIR [RUN_DIR ...]

"first turn, 1st episode" is the model's first answer of the run (cold unless a saved prompt was restored);
"first turn, later episodes" is the mean over the other episodes, whose prompt may be reused.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any


def summarize(run_dir: Path) -> dict[str, Any]:
    """The numbers of one run folder (results.jsonl)."""
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines() if line.strip()]
    results.sort(key=lambda r: r.get("started_at", ""))
    turns = [[t["seconds"] for t in r["timings"] if t["kind"] == "agent"] for r in results]
    usage = [r["agent_usage"] for r in results]
    return {
        "run": run_dir.name,
        "episodes": len(results),
        "solved": sum(bool(r.get("success")) for r in results),
        "statuses": " ".join(f"{status}:{n}" for status, n in Counter(r["status"] for r in results).items()),
        "episode_s": [round(r["latency_s"]) for r in results],
        "sum_episode_s": round(sum(r["latency_s"] for r in results)),
        "first_turn_first_episode_s": round(turns[0][0], 1) if turns and turns[0] else None,
        "first_turn_later_episodes_s": round(mean(t[0] for t in turns[1:] if t), 1) if len(turns) > 1 else None,
        "agent_turns": sum(len(t) for t in turns),
        "s_per_agent_turn": round(mean(s for t in turns for s in t), 1) if any(turns) else None,
        "prompt_tokens": sum(u["input_tokens"] for u in usage),
        "cached_tokens": sum(u["cached_tokens"] for u in usage),
        "output_tokens": sum(u["output_tokens"] for u in usage),
    }


def main() -> None:
    """Print one column per run folder."""
    rows = [summarize(Path(arg)) for arg in sys.argv[1:]]
    if not rows:
        sys.exit("usage: python benchmarks/demo_summary.py RUN_DIR [RUN_DIR ...]")
    keys = [k for k in rows[0] if k != "run"]
    width = max(len(str(value)) for r in rows for value in r.values()) + 2
    print(f"{'':<30}" + "".join(f"{r['run']:>{width}}" for r in rows))
    for key in keys:
        print(f"{key:<30}" + "".join(f"{r[key]!s:>{width}}" for r in rows))


if __name__ == "__main__":
    main()
