"""The environment package this runtime serves: its spec, data files and environment class."""

from __future__ import annotations

import importlib
import json
import os

from . import journal

TYPE_CHECKING = False  # `typing`, `pathlib` and `dataclasses` stay out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_PACKAGE_NAME = __name__.rsplit(".", 2)[0]


class EnvPackage:
    """Everything the server needs to know about its environment, read once at start. `env_class` None: not
    imported here (episodes in processes of their own)."""

    def __init__(self, spec: dict[str, Any], default_state: dict[str, Any], scenarios: dict[str, dict[str, Any]],
                 env_class: type | None) -> None:
        self.spec = spec
        self.default_state = default_state
        self.scenarios = scenarios
        self.env_class = env_class

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


def _read(*parts: str | os.PathLike[str]) -> Any:
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return json.load(f)


def with_class(package: EnvPackage, package_name: str = _PACKAGE_NAME) -> EnvPackage:
    """`package` with its environment class imported (the environment module runs)."""
    module = importlib.import_module(f"{package_name}.environment")
    env_class = journal.journaled_class(getattr(module, package.spec["class_name"]))
    return EnvPackage(package.spec, package.default_state, package.scenarios, env_class)


def load_package(package_dir: str | os.PathLike[str] = PACKAGE_DIR, package_name: str = _PACKAGE_NAME, *,
                 import_class: bool = True) -> EnvPackage:
    """Read spec.json, data/*.json and (unless `import_class` is False) import the environment class of the
    package: without it no environment code runs."""
    spec = _read(package_dir, "spec.json")
    scenarios = {s["id"]: s for s in _read(package_dir, "data", "scenarios.json")}
    package = EnvPackage(spec=spec, default_state=_read(package_dir, "data", "default_state.json"),
                         scenarios=scenarios, env_class=None)
    return with_class(package, package_name) if import_class else package
