"""The servers the conformance suite runs over: every folder in generated_servers/ plus the test fixture.

Each subject carries what the fidelity test needs to replay scenarios in process: the class source,
its state attribute names and the scenarios with reference solutions.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from envscaler_mcp.catalog.paths import generated_servers_dir, scenarios_dir
from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.launch.target import ServerDir, read_spec, server_dir_info
from envscaler_mcp.render import ensure_rendered
from envscaler_mcp.scenario.models import Scenario

FIXTURE = "fixture_shop"
MINI_SHOP = "mini_shop"


@dataclass
class Subject:
    """One server under test."""

    name: str
    server: ServerDir
    scenarios: list[Scenario] = field(default_factory=list)

    @property
    def spec(self) -> dict[str, Any]:
        return read_spec(self.server)

    @property
    def class_source(self) -> str:
        return (self.server.path / self.server.package / "environment.py").read_text(encoding="utf-8")

    @property
    def default_state(self) -> dict[str, Any]:
        path = self.server.path / self.server.package / "data" / "default_state.json"
        return dict(json.loads(path.read_text(encoding="utf-8")))


def subject_names() -> list[str]:
    """Ids of every subject (known at collection time)."""
    root = generated_servers_dir()
    bundled = sorted(p.name for p in root.iterdir() if (p / "manifest.json").is_file()) if root.is_dir() else []
    extra = [MINI_SHOP] if (fixture_dir() / MINI_SHOP / "skeleton.json").is_file() else []
    return [FIXTURE, *extra, *bundled]


@cache
def get_subject(name: str) -> Subject:
    """Build (rendering the fixture into the cache when needed) one subject."""
    if name == FIXTURE:
        from tests.render.fixture_env import scenarios, skeleton

        return Subject(name, server_dir_info(ensure_rendered(skeleton(), scenarios())), scenarios())
    if name == MINI_SHOP:
        folder = fixture_dir() / MINI_SHOP
        mini = load_scenarios(folder / "scenarios.jsonl")
        return Subject(name, server_dir_info(ensure_rendered(load_skeleton(folder), mini)), mini)
    server = server_dir_info(generated_servers_dir() / name)
    path = scenarios_dir() / f"{name}.jsonl"
    return Subject(name, server, load_scenarios(path) if path.exists() else [])


def replay_in_process(subject: Subject, state: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]
                      ) -> tuple[dict[str, Any], list[Any]]:
    """Run the calls on the environment class directly (no server), with the server's failure contract:
    a call that raises or returns {"success": False} leaves the state as it was. Returns (state, results)."""
    spec = subject.spec
    namespace: dict[str, Any] = {"__name__": f"_inproc_{subject.name}"}
    exec(compile(subject.class_source, f"<{subject.name} environment>", "exec"), namespace)
    env = namespace[spec["class_name"]]()
    for key, value in copy.deepcopy(state).items():
        setattr(env, key, value)
    names = list(spec["state_names"]) + [k for k in state if k not in spec["state_names"]]
    results: list[Any] = []
    for tool, arguments in calls:
        saved = copy.deepcopy(env.__dict__)
        try:
            value = getattr(env, tool)(**arguments)
        except Exception:
            env.__dict__.clear()
            env.__dict__.update(saved)
            results.append("error")
            continue
        if not isinstance(value, dict):
            value = {"result": value}
        if value.get("success") is False:
            env.__dict__.clear()
            env.__dict__.update(saved)
        results.append(json.loads(json.dumps(value)))
    final = {n: getattr(env, n) for n in names if hasattr(env, n)}
    return json.loads(json.dumps(final)), results


def fixture_dir() -> Path:
    """Where tests/fixtures lives (other fixture environments, when present)."""
    return Path(__file__).resolve().parents[1] / "fixtures"
