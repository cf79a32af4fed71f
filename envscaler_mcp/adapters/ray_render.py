"""`render --ray`: environments rendered on Ray workers, one item per environment.

The items run on the actors of adapters/ray_items.py: a worker renders the environment's server through the
local render's own code (render.engine.render_server) into its scratch folder and records its files as
writes; they come back to the driver, which makes them in a staging folder beside the output and swaps the
server's folder into place whole (render.engine.swap_in), as a local render does. So the output is a local
render's, byte for byte. Imported only when a run asks for Ray; `ray` is the optional extra `.[ray]`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_mcp._io import atomic_write_text, read_text
from envscaler_mcp.adapters.ray_items import ItemCallback, RayCommand
from envscaler_mcp.adapters.ray_run import driver_home
from envscaler_mcp.catalog.paths import set_home
from envscaler_mcp.catalog.store import StoredScenarios, get_skeleton, scenarios_path
from envscaler_mcp.render.engine import render_server, swap_in
from envscaler_mcp.render.naming import safe_env_id


@dataclass
class RenderJob:
    """Environments on a Ray worker: each rendered in the scratch folder, its files recorded as writes."""

    home: str | None = None  # the driver's data home (--home): environment ids resolve there, as in the driver

    async def open(self, resources: Any) -> None:
        if self.home is not None:
            set_home(Path(self.home))

    async def run(self, out: Path, on_item: ItemCallback, env: str) -> None:
        skeleton = get_skeleton(env)
        scenarios = StoredScenarios(scenarios_path(env, skeleton.id))
        folder = safe_env_id(skeleton.id)
        with tempfile.TemporaryDirectory(prefix="envscaler-render-") as scratch:
            rendered = render_server(skeleton, scenarios, Path(scratch) / folder)
            for path in sorted(p for p in rendered.rglob("*") if p.is_file()):
                atomic_write_text(out / folder / path.relative_to(rendered), read_text(path))
        on_item("render", folder, f"{len(skeleton.tools)} tools, {len(scenarios)} scenarios")


class RayRender(RayCommand):
    """The renderer of `render --ray` (render/cli.py RemoteRender)."""

    def run(self, envs: list[str], root: Path, report: Callable[[str, str], None]) -> None:
        """Render each environment on the cluster; each server's folder is swapped into root as it arrives."""
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=root, prefix=".ray-render-"))

        def placed(_stage: str, folder: str, counts: str) -> None:
            swap_in(staging / folder, root / folder)
            report(folder, counts)

        try:
            self.item_run(RenderJob(driver_home()), staging, on_item=placed).run(envs)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
