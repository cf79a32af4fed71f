"""The measuring tools of benchmarks/ keep what they are given: a catalog kept for later runs survives a run that
reuses it, and the fit that splits eval's CPU into per-environment and per-episode parts gives back the parts
it was made from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _catalog_bench(work: Path, *flags: str) -> None:
    subprocess.run([sys.executable, str(BENCH / "catalog_scale_bench.py"), "--envs", "2", "--only", "list", "--work",
                    str(work), *flags], check=True, capture_output=True, timeout=300)


def test_a_run_that_reuses_a_kept_catalog_leaves_it_whole(tmp_path: Path) -> None:
    _catalog_bench(tmp_path, "--keep")
    home = tmp_path / "n2" / "home"
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*.jsonl"))
    assert len(before) == 2  # the two environments' scenario files
    _catalog_bench(tmp_path, "--reuse")  # no --keep: it used to delete the catalog it had reused
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*.jsonl")) == before
    assert (home / "environments").is_dir()


def test_the_fit_gives_back_the_fixed_and_marginal_parts() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        from fixed_and_marginal import _fit
    finally:
        sys.path.remove(str(BENCH))
    fixed, marginal = 0.1335, 0.02619  # seconds per environment, per episode
    runs = [(100, episodes, fixed * 100 + marginal * episodes + noise)
            for episodes, noise in ((500, 0.2), (1000, -0.1), (500, -0.2), (1000, 0.1))]
    got_fixed, got_marginal = _fit(runs)
    assert abs(got_fixed - fixed) < 1e-9 and abs(got_marginal - marginal) < 1e-9  # the noise cancels in pairs
    one_sided = _fit([(100, 500, fixed * 100 + marginal * 500), (100, 1000, fixed * 100 + marginal * 1000 + 1)])
    assert abs(one_sided[1] - marginal - 1 / 500) < 1e-9  # a second more at 1,000 episodes is 2 ms per episode
