"""Which states the state step's closed-collection check (synth/scen/feasible.py) refuses.

    python benchmarks/state_work.py [STATE.json ...]

For each environment of the catalog: its default state and each of its scenarios' initial states, probed with
the calls known in the environment (`feasible.known_for`: the reference calls of its other scenarios, so a
scenario's state is not judged by the calls written for it, and the calls its dual-agent check saw succeed); the
initial states the recorded model runs of tests/fixtures/recorded/scen-*/ answered (each answer the state step
accepts); then each STATE.json given (a `synth scenarios` state record, OUT/_work/<env>/states/sNNN.json, or a
bare state; the environment read from the path). Prints one line per state and the counts; a refused state is
also reopened as the state step does before asking the model again (synth/scen/reopen.py), and the line says
whether that made it workable.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from envscaler_mcp._io import read_json
from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, load_skeleton, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.scen.feasible import closed_reason, judge_state, known_for
from envscaler_mcp.synth.scen.reopen import reopen_state
from envscaler_mcp.synth.scen.steps import StepContext
from envscaler_mcp.synth.skel.checkstage import accept_initial_state
from envscaler_mcp.synth.skel.dangling import without_dangling

ROOT = Path(__file__).resolve().parents[1]
Named = tuple[str, dict[str, Any], int | None]  # (name, state, the scenario whose calls are left out)


def recorded_states(folder: Path, skeleton: EnvSkeleton) -> list[Named]:
    """The initial states among a recorded run's answers (those the state step accepts)."""
    found: list[Named] = []
    for path in sorted((folder / "answers").rglob("*.json")):
        content = (read_json(path).get("turn", {}).get("message", {}) or {}).get("content") or ""
        try:
            found.append((f"{folder.name}/{path.name[:12]}", accept_initial_state(skeleton, content), None))
        except Exception:  # not a state answer, or one the state step refuses: not a state of the run
            continue
    return found


async def judge_all(skeleton: EnvSkeleton, states: list[Named], counts: dict[str, int]) -> None:
    scenarios = scenarios_for(skeleton.id)
    provider = MockProvider()
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    changers = {t.name for t in skeleton.tools if t.kind == "state_change"}
    async with launch_server(skeleton, "memory") as server:
        for name, state, skip in states:
            known = known_for(ctx, [s for i, s in enumerate(scenarios) if i != skip])
            judged = await judge_state(state, known, changers, server.episode)
            closed = ", ".join(c.collection for c in judged.closed) or "none"
            counts["judged"] += bool(judged.open or judged.closed)
            if judged.refused:
                counts["refused"] += 1
                print(f"REFUSED {skeleton.id} {name}: {closed_reason(judged, state)}")
                mended = await reopen_state(skeleton, state, judged, lambda s, known=known: judge_state(
                    s, known, changers, server.episode))
                counts["mended"] += mended is not None
                print(f"  {'MENDED: ' + '; '.join(mended[1]) if mended else 'not mended by reopening'}")
            else:
                counts["kept"] += 1
                print(f"kept {skeleton.id} {name} (open: {', '.join(judged.open) or 'none'}; closed: {closed})")


async def main(extra: list[Path]) -> None:
    counts = {"kept": 0, "refused": 0, "judged": 0, "mended": 0}
    for env_id in list_env_ids():
        skeleton = get_skeleton(env_id)
        states: list[Named] = [("default", skeleton.default_state or {}, None)]
        states += [(s.id, s.initial_state, i) for i, s in enumerate(scenarios_for(env_id))]
        await judge_all(skeleton, states, counts)
    for folder in sorted((ROOT / "tests" / "fixtures" / "recorded").glob("scen-*")):
        skeleton = load_skeleton(folder / "skeleton.json")
        await judge_all(skeleton, recorded_states(folder, skeleton), counts)
    for path in extra:
        env_id = next((p for p in path.parts if p in list_env_ids()), None)
        if env_id is None or not path.is_file():
            print(f"error: {path}: not a state file under a folder named after an environment", file=sys.stderr)
            continue
        data = read_json(path)
        state = data.get("state", data)
        if (kept := without_dangling(state)) is not None:  # as the state step does first
            print(f"{path}: {'; '.join(kept[1].values())}")
            state = kept[0]
        await judge_all(get_skeleton(env_id), [(str(path), state, None)], counts)
    print(f"{counts['refused']} refused ({counts['mended']} of them workable once reopened), {counts['kept']} kept "
          f"({counts['judged']} with some collection judged)")


if __name__ == "__main__":
    anyio.run(main, [Path(a) for a in sys.argv[1:]])
