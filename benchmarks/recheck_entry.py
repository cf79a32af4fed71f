"""Re-check a catalog environment with the environment check's tool coverage, and optionally give the tools not
proven to work one repair round by a model (as `synth envs` does), then check again.

    nice -n 10 .venv/bin/python benchmarks/recheck_entry.py ENV [--model local/qwen2.5-coder-1.5b] --out DIR

Writes DIR/report.json (each tool's status before and after, the repair's notes and usage) and, after a repair,
DIR/skeleton.json (the repaired environment, for `envscaler-mcp catalog add`). The coverage uses the
environment's default state, its scenarios' reference solutions and their initial states.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from envscaler_mcp.catalog.store import get_skeleton
from envscaler_mcp.skeleton.build import skeleton_json
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.skel.checkstage import _rebuild, repair_methods
from envscaler_mcp.synth.skel.coverage import failing_checks
from tests.qa.seeded_tool_defects import prove


async def main(env: str, model: str | None, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    skeleton = get_skeleton(env)
    before = await prove(skeleton, env)
    report: dict[str, object] = {"env": env, "before": {t: p.model_dump(mode="json") for t, p in before.items()}}
    print("before:", {t: p.status for t, p in before.items()}, flush=True)
    failing = failing_checks(list(before.values()))
    if model and failing:
        from envscaler_mcp.providers.registry import get_provider

        provider, meter = get_provider(model), UsageMeter()
        try:
            source, repaired, notes = await repair_methods(skeleton, failing, provider, 2, meter,
                                                           {t.name: t.kind for t in skeleton.tools})
        finally:
            await provider.aclose()
        report.update(model=model, repaired=repaired, notes=notes, usage=meter.total.model_dump(mode="json"))
        print("repaired:", repaired, "notes:", notes, flush=True)
        if repaired:
            candidate = _rebuild(skeleton, source, skeleton.default_state, strict=False)
            after = await prove(candidate, env)
            report["after"] = {t: p.model_dump(mode="json") for t, p in after.items()}
            (out / "skeleton.json").write_text(skeleton_json(candidate), encoding="utf-8")
            print("after:", {t: p.status for t, p in after.items()}, flush=True)
    (out / "report.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("env")
    parser.add_argument("--model", default=None)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    anyio.run(main, args.env, args.model, args.out)
