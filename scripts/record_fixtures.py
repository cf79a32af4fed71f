"""Turn the response cache of a real `synth envs` or `synth scenarios` run into labelled replay fixtures.

    .venv/bin/python scripts/record_fixtures.py envs CACHE DEST --tasks api-bank-lv3-train.json --limit 3 \
        --max-failed-methods 2 --check-calls 10 --spec local/qwen2.5-coder-1.5b --date 2026-11-27
    .venv/bin/python scripts/record_fixtures.py scenarios CACHE DEST --skeleton skeleton.json -n 8 \
        --spec local/qwen2.5-coder-1.5b --date 2026-11-27 [--guard state] [--keep-out OUT]

Replays the whole pipeline offline (every answer comes from CACHE; nothing reaches a model; servers and the
validator sandbox are real), writes each answer served with its full request and the label 'recorded from
SPEC on DATE' into DEST/answers, and DEST/manifest.json with the options and the outcome. The inputs are copied
beside them (for envs only the corpus records the run read).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envscaler_mcp.providers.replay import ReplayProvider
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.skel.corpus import collect_tasks, load_records
from tests.synth.fixtures.recorded_replay import replay_envs, replay_scenarios


def corpus_prefix(path: Path, limit: int) -> list[Any]:
    """The shortest start of the corpus from which the mine stage takes the same `limit` tasks."""
    records = load_records(path)
    wanted = [t.task for t in collect_tasks(path, limit=limit)[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(1, len(records) + 1):
            part = Path(tmp) / "part.json"
            part.write_text(json.dumps(records[:n]), encoding="utf-8")
            if [t.task for t in collect_tasks(part, limit=limit)[0]] == wanted:
                return records[:n]
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pipeline", choices=["envs", "scenarios"])
    parser.add_argument("cache", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("--tasks", type=Path, help="envs: the task corpus")
    parser.add_argument("--limit", type=int, help="envs: as given to the recorded run")
    parser.add_argument("--max-failed-methods", type=int, default=0, help="envs: as given to the recorded run")
    parser.add_argument("--check-calls", type=int, default=None, help="envs: as given to the recorded run")
    parser.add_argument("--skeleton", type=Path, help="scenarios: the environment's skeleton.json")
    parser.add_argument("-n", type=int, default=None, help="scenarios: as given to the recorded run")
    parser.add_argument("--guard", default="validators", help="scenarios: as given to the recorded run")
    parser.add_argument("--keep-out", type=Path, default=None,
                        help="write the replayed pipeline's output there (scenario sets, environments) and keep it")
    args = parser.parse_args()
    label = f"recorded from {args.spec} on {args.date}"
    answers = args.dest / "answers"
    if answers.exists():
        shutil.rmtree(answers)
    args.dest.mkdir(parents=True, exist_ok=True)
    provider = ReplayProvider(args.spec, args.cache, record_to=answers, label=label)
    options: dict[str, Any]
    with tempfile.TemporaryDirectory() as scratch:
        tmp = str(args.keep_out) if args.keep_out else scratch
        if args.pipeline == "envs":
            options = {"limit": args.limit, "max_failed_methods": args.max_failed_methods,
                       "check_calls": args.check_calls}
            (args.dest / "tasks.json").write_text(json.dumps(corpus_prefix(args.tasks, args.limit), indent=1) + "\n",
                                                  encoding="utf-8")
            result = anyio.run(replay_envs, provider, args.dest / "tasks.json", Path(tmp), options)
            inputs = {"tasks": "tasks.json"}
        else:
            options = {"n": args.n, "guard": args.guard, "steer": True}
            shutil.copyfile(args.skeleton, args.dest / "skeleton.json")
            skeleton = EnvSkeleton.model_validate_json(args.skeleton.read_text(encoding="utf-8"))
            result = anyio.run(replay_scenarios, provider, skeleton, Path(tmp), options)
            inputs = {"skeleton": "skeleton.json"}
    manifest = {"label": label, "spec": args.spec, "pipeline": args.pipeline, "options": options, **inputs, **result}
    (args.dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
