"""Which states the state step's closed-collection check (synth/scen/feasible.py) refuses.

    python benchmarks/state_work.py [STATE.json ...]

For each bundled environment: its default state and each of its scenarios' initial states, probed with the
reference calls of the environment's other scenarios (a scenario's own calls are left out, so its state is not
judged by the calls written for it); then each STATE.json given (a `synth scenarios` state record,
OUT/_work/<env>/states/sNNN.json, or a bare state; the environment read from the path), probed with every
scenario's calls. Prints one line per refused state and the counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from envscaler_mcp._io import read_json
from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.synth.scen.feasible import Known, closed_reason, judge_state, known_calls


def _known(scenarios: list, skip: int | None = None) -> list[Known]:
    return known_calls((s.initial_state, s.reference_solution)
                       for i, s in enumerate(scenarios) if i != skip)


async def main(extra: list[Path]) -> None:
    kept = refused = 0
    for env_id in list_env_ids():
        skeleton = get_skeleton(env_id)
        scenarios = scenarios_for(env_id)
        changers = {t.name for t in skeleton.tools if t.kind == "state_change"}
        states = [("default", skeleton.default_state or {}, None)]
        states += [(s.id, s.initial_state, i) for i, s in enumerate(scenarios)]
        states += [(str(p), (lambda d: d.get("state", d))(read_json(p)), None) for p in extra if env_id in p.parts]
        async with launch_server(skeleton, "memory") as server:
            for name, state, skip in states:
                judged = await judge_state(state, _known(scenarios, skip), changers, server.episode)
                closed = ", ".join(c.collection for c in judged.closed) or "none"
                if judged.refused:
                    refused += 1
                    print(f"REFUSED {env_id} {name}: {closed_reason(judged, state)}")
                else:
                    kept += 1
                    print(f"kept {env_id} {name} (open: {', '.join(judged.open) or 'none'}; closed: {closed})")
    print(f"{refused} refused, {kept} kept")


if __name__ == "__main__":
    anyio.run(main, [Path(a) for a in sys.argv[1:]])
