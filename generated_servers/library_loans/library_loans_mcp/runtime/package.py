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
    """Everything the server needs to know about its environment. `env_class` None: not imported here (episodes
    in processes of their own). The spec is read at start; the data files (the default state, the bundled
    scenarios) when first used: a server whose episodes all start from states its client names never parses
    them (a catalog environment's 157 kB default state, in the server and again in its episode zygote)."""

    def __init__(self, spec: dict[str, Any], default_state: dict[str, Any] | None = None,
                 scenarios: dict[str, dict[str, Any]] | None = None, env_class: type | None = None, *,
                 package_dir: str | os.PathLike[str] | None = None) -> None:
        self.spec = spec
        self._default_state = default_state
        self._scenarios = scenarios
        self.env_class = env_class
        self.package_dir = package_dir

    @property
    def default_state(self) -> dict[str, Any]:
        if self._default_state is None:
            self._default_state = self._data("default_state.json")
        return self._default_state

    @property
    def scenarios(self) -> dict[str, dict[str, Any]]:
        if self._scenarios is None:
            self._scenarios = {s["id"]: s for s in self._data("scenarios.json")}
        return self._scenarios

    def _data(self, name: str) -> Any:
        """A data file of the package, parsed; ValueError naming it when it cannot be read."""
        if self.package_dir is None:
            raise ValueError(f"data/{name}: this package's data was given, not read from a folder")
        try:
            return _read(self.package_dir, "data", name)
        except (OSError, ValueError) as exc:
            raise ValueError(f"data/{name} cannot be read ({type(exc).__name__}: {exc})") from None

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
    return EnvPackage(package.spec, package._default_state, package._scenarios, env_class,
                      package_dir=package.package_dir)


def load_package(package_dir: str | os.PathLike[str] = PACKAGE_DIR, package_name: str = _PACKAGE_NAME, *,
                 import_class: bool = True) -> EnvPackage:
    """Read spec.json (data/*.json when first used) and, unless `import_class` is False, import the environment
    class of the package: without it no environment code runs."""
    package = EnvPackage(_read(package_dir, "spec.json"), package_dir=package_dir)
    return with_class(package, package_name) if import_class else package
