"""CPU of the end of a run: the summary's pass over results.jsonl and the HTML report, on a finished run folder.

    python benchmarks/report_bench.py RUN_DIR [--repeat 3]

Times `load_run` (one pass over results.jsonl: the summary and each episode's row of the page's table) and
`write_report` (the page, each record read once more for its section) in this process's CPU time, `--repeat`
times, and prints each run and the median. The page goes to a temporary file; the run folder is left as it
is. To compare two trees, run each tree's copy of this script from a folder outside both checkouts (`python
-m` and a script's own folder put code ahead of PYTHONPATH) with PYTHONPATH=<tree>.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from envscaler_mcp.report.html import load_run, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    loads, reports = [], []
    with tempfile.TemporaryDirectory() as scratch:
        page = Path(scratch) / "report.html"
        for n in range(args.repeat):
            t0 = time.process_time()
            run = load_run(args.run_dir)
            t1 = time.process_time()
            write_report(args.run_dir, page, run)
            t2 = time.process_time()
            loads.append(t1 - t0)
            reports.append(t2 - t1)
            print(f"run {n + 1}: load_run {t1 - t0:.3f} s, write_report {t2 - t1:.3f} s, "
                  f"{page.stat().st_size / 1e6:.1f} MB page")
    print(f"median of {args.repeat}: load_run {statistics.median(loads):.3f} s, "
          f"write_report {statistics.median(reports):.3f} s ({run.summary.overall.episodes} episodes)")


if __name__ == "__main__":
    main()
