"""Turn the response cache of a real `synth envs` run into labelled replay fixtures.

    .venv/bin/python scripts/record_fixtures.py runs/cache tests/fixtures/recorded/envs-qwen2.5-coder-1.5b \
        --tasks /path/to/api-bank-lv3-train.json --limit 3 --spec local/qwen2.5-coder-1.5b --date 2026-11-25 \
        --max-failed-methods 2

Replays the run offline (every answer comes from CACHE; nothing reaches a model), writes each answer served
with its full request and the label 'recorded from SPEC on DATE' into DEST, and DEST/manifest.json with the
outcome per topic. The tasks file is copied beside them (only the first records the run read are needed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envscaler_mcp.providers.replay import ReplayProvider
from tests.synth.fixtures.recorded_replay import replay_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--tasks", type=Path, required=True)
    parser.add_argument("--limit", type=int, required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("--max-failed-methods", type=int, default=0, help="as given to the recorded run")
    args = parser.parse_args()
    label = f"recorded from {args.spec} on {args.date}"
    answers = args.dest / "answers"
    if answers.exists():
        shutil.rmtree(answers)
    provider = ReplayProvider(args.spec, args.cache, record_to=answers, label=label)
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(replay_envs, provider, args.tasks, Path(tmp), args.limit, args.max_failed_methods)
    manifest = {"label": label, "spec": args.spec, "limit": args.limit, "max_failed_methods": args.max_failed_methods,
                "tasks": "tasks.json", **result}
    (args.dest / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
