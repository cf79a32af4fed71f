"""IsolationReport: which isolation layers protect a sandboxed process on this machine (for run.json and reports)."""

from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, Field, computed_field

log = logging.getLogger("envscaler_mcp.isolation")
_warned: set[str] = set()


class Layer(BaseModel):
    """One isolation layer and whether the kernel let it be applied."""

    name: str = Field(description="Layer name, e.g. 'seccomp', 'landlock-fs', 'network-namespace'.")
    active: bool = Field(description="True when the layer is in force.")
    detail: str = Field(description="What the layer enforces when active; why it is not when refused or off.")


class IsolationReport(BaseModel):
    """The isolation layers around validators or environment servers, as applied on this machine."""

    subject: Literal["validators", "servers"] = Field(description="What the layers protect against.")
    layers: list[Layer] = Field(default_factory=list, description="Every layer, active or not.")

    @computed_field(description="'full' when every layer is active, else 'partial' (see `refused`) or 'off'.")  # type: ignore[prop-decorator]
    @property
    def level(self) -> str:
        os_layers = [layer for layer in self.layers if layer.name not in _ALWAYS]
        if all(layer.active for layer in os_layers):
            return "full"
        return "off" if not any(layer.active for layer in os_layers) else "partial"

    @computed_field(description="Names of the layers that are not in force.")  # type: ignore[prop-decorator]
    @property
    def refused(self) -> list[str]:
        return [layer.name for layer in self.layers if not layer.active]

    def warning(self) -> str | None:
        """One line naming the layers that are not in force and why; None when every layer is active."""
        missing = [layer for layer in self.layers if not layer.active and layer.name != "episode-process"]
        if not missing:  # sharing a process among episodes is a choice the record states, not a refusal
            return None
        parts = "; ".join(f"{layer.name}: {layer.detail}" for layer in missing)
        return f"{self.subject} run with reduced isolation ({self.level}) - not in force: {parts}"

    def warn_once(self) -> None:
        """Log the warning (once per process and distinct report) so nobody misses reduced isolation."""
        text = self.warning()
        if text and text not in _warned:
            _warned.add(text)
            log.warning("%s", text)


# Not OS layers a kernel grants or refuses (`level` ignores them); "episode-process" is the launcher's choice.
_ALWAYS = {"python-restrictions", "clean-environment", "resource-limits", "fresh-process-per-scenario",
           "episode-process"}


def from_layers(subject: Literal["validators", "servers"], layers: dict[str, list[object]]) -> IsolationReport:
    """Build a report from the plain {name: [active, detail]} mapping a sandboxed process sends back."""
    return IsolationReport(subject=subject, layers=[Layer(name=name, active=bool(value[0]), detail=str(value[1]))
                                                    for name, value in layers.items()])
