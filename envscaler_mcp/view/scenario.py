"""The initial state of an episode's scenario, for the viewer (results hold everything but that)."""

from __future__ import annotations

from pathlib import Path

from envscaler_mcp._json import State
from envscaler_mcp.catalog.store import load_scenario_line, scenario_headers, scenarios_path
from envscaler_mcp.errors import EnvScalerError
from envscaler_mcp.harness.config import RunManifest


def initial_state_of(manifest: RunManifest | None, env_id: str, scenario_id: str) -> tuple[State | None, str]:
    """(the scenario's initial state, '') or (None, why it cannot be shown): read from where the run's
    environment came from (an environment folder it named, else the catalog)."""
    if manifest is None:
        return None, "the run folder has no run.json"
    targets = [t for t in manifest.config.envs if Path(t).name == env_id or Path(t).parent.name == env_id]
    for target in [*targets, env_id]:
        try:
            path = scenarios_path(target, env_id)
            for scenario, line in scenario_headers(path, {scenario_id}):
                if scenario.id == scenario_id:
                    return load_scenario_line(path, line, scenario_id).initial_state, ""
        except (EnvScalerError, OSError, ValueError):
            continue
    return None, f"scenario {scenario_id} of {env_id} is not in the catalog this viewer reads (or it changed)"
