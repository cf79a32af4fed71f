"""The environment package this runtime serves: its spec, data files and environment class."""

from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import journal

PACKAGE_DIR = Path(__file__).resolve().parent.parent
_PACKAGE_NAME = __name__.rsplit(".", 2)[0]


@dataclass
class EnvPackage:
    """Everything the server needs to know about its environment, read once at start."""

    spec: dict[str, Any]
    default_state: dict[str, Any]
    scenarios: dict[str, dict[str, Any]]
    env_class: type | None = field(repr=False)  # None: not imported here (episodes in processes of their own)

    @property
    def env_id(self) -> str:
        return str(self.spec["env_id"])

    @property
    def state_names(self) -> list[str]:
        return list(self.spec["state_names"])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.spec["tools"])

    def scenario_state(self, scenario_id: str) -> dict[str, Any]:
        """Initial state of a bundled scenario; raises KeyError with the known ids."""
        try:
            state: dict[str, Any] = self.scenarios[scenario_id]["initial_state"]
        except KeyError:
            known = ", ".join(self.scenarios) or "(none)"
            raise KeyError(f"unknown scenario '{scenario_id}'; bundled scenarios: {known}") from None
        return state


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def with_class(package: EnvPackage, package_name: str = _PACKAGE_NAME) -> EnvPackage:
    """`package` with its environment class imported (the environment module runs)."""
    module = importlib.import_module(f"{package_name}.environment")
    return dataclasses.replace(package, env_class=journal.journaled_class(getattr(module, package.spec["class_name"])))


def load_package(package_dir: Path = PACKAGE_DIR, package_name: str = _PACKAGE_NAME, *,
                 import_class: bool = True) -> EnvPackage:
    """Read spec.json, data/*.json and (unless `import_class` is False) import the environment class of the
    package: without it no environment code runs."""
    spec = _read(package_dir / "spec.json")
    scenarios = {s["id"]: s for s in _read(package_dir / "data" / "scenarios.json")}
    package = EnvPackage(spec=spec, default_state=_read(package_dir / "data" / "default_state.json"),
                         scenarios=scenarios, env_class=None)
    return with_class(package, package_name) if import_class else package
