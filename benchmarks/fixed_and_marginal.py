"""What an environment costs once and what each of its episodes adds, by kind of process (root and cgroup v1).

    sudo .venv/bin/python benchmarks/fixed_and_marginal.py --home HOME [--limits 5,10] [--repeat 2] [-- EVAL ARGS]

Runs `envscaler-mcp eval --all --agent oracle --home HOME --limit L --no-progress [EVAL ARGS]` for each L of
`--limits`, alternately, `--repeat` times, each under tree_cpu_split.py's cpuacct groups (episode zygotes and
their episodes, servers, validators, the command's own process). Each run's environments and episodes are
counted from its results.jsonl, and for each kind of process CPU = fixed x environments + marginal x episodes
is fitted over the runs (least squares). Every run starts the same environments' servers; only how many of
each one's scenarios it runs changes. (`--trials` would not do: a later trial of a scenario reuses the first's
scenario line, reference, state file and validator request, so its cost is not an episode's.)

Prints, per kind: the fixed CPU per environment, the marginal CPU per episode, and both per episode at
`--per-env` scenarios an environment (the catalog's 10 by default). Throughput on a quiet machine is measured
by catalog_scale_bench.py; this says where the CPU of it goes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tree_cpu_split import KINDS, measure

from envscaler_mcp._io import iter_jsonl

GROUPS = (*KINDS, "command")


def _counts(results: Path) -> tuple[int, int]:
    """(environments, episodes) of a run's results.jsonl."""
    envs = [record["env_id"] for _, record in iter_jsonl(results)]
    return len(set(envs)), len(envs)


def _fit(points: list[tuple[int, int, float]]) -> tuple[float, float]:
    """(fixed per environment, marginal per episode) of cpu = fixed * envs + marginal * episodes, least squares."""
    sxx = sum(e * e for e, _, _ in points)
    syy = sum(n * n for _, n, _ in points)
    sxy = sum(e * n for e, n, _ in points)
    sxc = sum(e * c for e, _, c in points)
    syc = sum(n * c for _, n, c in points)
    det = sxx * syy - sxy * sxy
    if not det:
        raise SystemExit("error: the runs do not separate environments from episodes (give two different --limits)")
    return (sxc * syy - syc * sxy) / det, (syc * sxx - sxc * sxy) / det


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", required=True, help="the catalog's home (--home of eval)")
    parser.add_argument("--limits", default="5,10", help="scenarios per environment of the runs (default 5,10)")
    parser.add_argument("--repeat", type=int, default=2, help="runs at each limit (default 2)")
    parser.add_argument("--per-env", type=int, default=10, help="scenarios per environment for the summary line")
    parser.add_argument("--envscaler-mcp", default=str(Path(sys.executable).with_name("envscaler-mcp")),
                        help="the command (default: the one beside this Python)")
    parser.add_argument("eval_args", nargs=argparse.REMAINDER, help="more eval arguments (after --)")
    args = parser.parse_args()
    limits = [int(x) for x in args.limits.split(",") if x.strip()]
    if len(set(limits)) < 2 or min(limits) < 1:
        parser.error("--limits needs two or more different counts of at least 1")
    points: dict[str, list[tuple[int, int, float]]] = {g: [] for g in ("whole", *GROUPS)}
    with tempfile.TemporaryDirectory(prefix="fixed-marginal-") as tmp:
        for round_ in range(args.repeat):
            for limit in limits:
                out = Path(tmp) / f"run-{round_}-{limit}"
                command = [args.envscaler_mcp, "eval", "--all", "--agent", "oracle", "--home", args.home,
                           "--limit", str(limit), "--out", str(out), "--no-progress",
                           *(a for a in args.eval_args if a != "--")]
                measured = measure(command)
                if measured is None:
                    raise SystemExit(1)
                code, wall, used, _ = measured
                if code != 0:
                    raise SystemExit(f"error: eval --limit {limit} exited {code}")
                envs, episodes = _counts(out / "results.jsonl")
                own_user, own_system = used.own()
                cpu = {"whole": (used.user[""] + used.system[""]) / 1e9,
                       **{k: (used.user.get(k, 0) + used.system.get(k, 0)) / 1e9 for k in KINDS},
                       "command": (own_user + own_system) / 1e9}
                for group, seconds in cpu.items():
                    points[group].append((envs, episodes, seconds))
                print(f"--limit {limit}: {envs} environments, {episodes} episodes, {wall:.1f} s wall, "
                      f"{cpu['whole']:.2f} s CPU, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n{'':12s} {'fixed ms/env':>13s} {'marginal ms/episode':>20s} "
          f"{f'ms/episode at {args.per_env}/env':>24s}")
    for group in ("whole", *GROUPS):
        fixed, marginal = _fit(points[group])
        print(f"{group:12s} {1000 * fixed:13.1f} {1000 * marginal:20.2f} "
              f"{1000 * (fixed / args.per_env + marginal):24.2f}")


if __name__ == "__main__":
    main()
