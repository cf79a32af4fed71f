"""CLI commands of the catalog stage: `catalog build`, `list`, `show`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from envscaler_mcp._json import JSONObject
from envscaler_mcp._tables import Col, fit_rows, fit_table
from envscaler_mcp.catalog.options import HomeOption


def _roots(home: Path | None) -> tuple[Path, Path]:
    """(environments folder, scenarios folder) of a data home, or of the bundled catalog."""
    from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir

    if home is None:
        return environments_dir(), scenarios_dir()
    return Path(home) / "environments", Path(home) / "scenarios"


catalog_app = typer.Typer(help="Build and inspect the bundled environment catalog.", no_args_is_help=True)


@catalog_app.command("build")
def build_cmd(
    envs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Environment ids or authoring-folder paths to build (default: every authoring folder)."
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only check: exit 1 when a skeleton.json is stale.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Build environments/<env>/skeleton.json from environment.py, meta.json and default_state.json."""
    from envscaler_mcp.skeleton.build import authoring_dirs, build_folder

    env_root, _ = _roots(home)
    folders = authoring_dirs(env_root, envs or None)
    if not folders:
        typer.echo("no authoring folders found (each needs an environment.py).")
        return
    stale = []
    for folder in folders:
        status = build_folder(folder, check=check)
        typer.echo(f"{folder.name}: {status}")
        if status in ("stale", "missing"):
            stale.append(folder.name)
    if stale:
        typer.secho(
            f"{len(stale)} skeleton.json file(s) are stale or missing: {', '.join(stale)}. "
            "Run `envscaler-mcp catalog build` and commit the result.",
            fg=typer.colors.RED,
            err=True,
        )
        raise typer.Exit(1)


@catalog_app.command("add")
def add_cmd(
    skeleton: Annotated[Path, typer.Argument(help="A skeleton.json (e.g. synth/environments/<env>/skeleton.json).")],
    scenarios: Annotated[Path | None, typer.Option(
        "--scenarios", help="Its scenario set (JSONL), copied to scenarios/<env>.jsonl.")] = None,
    home: HomeOption = None,
) -> None:
    """Add an environment (synthesized, imported) to the catalog as an authoring folder, keeping its provenance
    and quality, and build it; the rebuilt skeleton must have the same tools and code."""
    from envscaler_mcp._io import atomic_write_text, read_json, validate_model
    from envscaler_mcp.catalog.store import load_scenarios, save_scenarios
    from envscaler_mcp.errors import UsageError
    from envscaler_mcp.skeleton.build import authoring_files, build_folder, build_skeleton_from_dir
    from envscaler_mcp.skeleton.models import EnvSkeleton

    given = validate_model(EnvSkeleton, read_json(skeleton), path=skeleton)
    env_root, scen_root = _roots(home)
    folder = env_root / given.id
    if folder.exists():
        raise UsageError(f"{folder} exists: the catalog already has an environment '{given.id}'")
    kept = load_scenarios(scenarios) if scenarios is not None else []
    if any(s.env_id != given.id for s in kept):
        raise UsageError(f"{scenarios}: every scenario must be of environment '{given.id}'")
    try:
        for name, text in authoring_files(given).items():
            atomic_write_text(folder / name, text)
        rebuilt = build_skeleton_from_dir(folder)
        if [t.model_dump() for t in rebuilt.tools] != [t.model_dump() for t in given.tools] \
                or rebuilt.class_source != given.class_source:
            raise UsageError(f"{skeleton}: rebuilt from an authoring folder, its tools or code differ")
        build_folder(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing half-made is left in the catalog
        raise
    if kept:
        save_scenarios(kept, scen_root / f"{given.id}.jsonl")
    typer.echo(f"added {given.id} ({len(rebuilt.tools)} tools, {len(kept)} scenarios, origin "
               f"{rebuilt.provenance.source}) to {env_root}; render it with `envscaler-mcp render {given.id}`")


@catalog_app.command("schemas")
def schemas_cmd(
    check: Annotated[
        bool, typer.Option("--check", help="Only check: exit 1 when a schema file is stale.")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Folder to write (default: schemas/).")] = None,
) -> None:
    """Regenerate schemas/*.schema.json from the Pydantic models of the on-disk formats."""
    from envscaler_mcp.catalog.jsonschemas import write_schemas

    changed = write_schemas(out, check=check)
    for name in changed:
        typer.echo(f"{name}: {'stale' if check else 'written'}")
    if not changed:
        typer.echo("schemas are current.")
    if check and changed:
        typer.secho("Run `envscaler-mcp catalog schemas` and commit schemas/.", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


def list_cmd(home: HomeOption = None) -> None:
    """List the catalog's environments with their tool and scenario counts."""
    from envscaler_mcp.catalog.listing import env_rows

    env_root, scen_root = _roots(home)
    rows = [[*row[:4], row[5], row[4]] for _, row in env_rows(env_root, scen_root)]
    console = Console()
    columns = [Col("id", "id"), Col("name", "text"), Col("tools", justify="right"),
               Col("queries", drop=2, justify="right"), Col("scenarios", justify="right"), Col("origin", "text", drop=1)]
    console.print(fit_rows(columns, rows, console.width, title=f"Environments in {env_root}"))


def show_cmd(
    env: Annotated[str, typer.Argument(help="Environment id, or a path to a skeleton.json or its folder.")],
    home: HomeOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="Every finding kept in provenance.")] = False,
) -> None:
    """Show one environment: summary, rules, tools with kinds and parameters, scenarios.

    An imported environment also shows the findings its import kept in provenance."""
    from envscaler_mcp.catalog.findings import findings_lines
    from envscaler_mcp.catalog.store import get_skeleton, row_title, scenario_index, scenarios_path

    env_root, scen_root = _roots(home)
    sk = get_skeleton(env, env_root)
    console = Console()
    console.print(f"[bold]{escape(sk.name)}[/bold] ({sk.id}) - {escape(sk.summary)}")
    console.print(escape(sk.introduction))
    if sk.rules:
        console.print("\n[bold]Rules[/bold]")
        for rule in sk.rules:
            console.print(f"  - {escape(rule)}")
    findings = findings_lines(sk.provenance, verbose=verbose)
    if findings:
        console.print("\n[bold]Findings[/bold] (kept in provenance)")
        console.print(escape("\n".join(findings)), overflow="fold")
    proofs = {p.tool: p for p in sk.quality.tools} if sk.quality else {}
    tool_rows = []
    for t in sk.tools:
        req = t.required_parameters()
        params = ", ".join(
            f"{name}{'' if name in req else '?'}: {_type_label(schema)}"
            for name, schema in t.parameters().items()
        )
        proven = [proofs[t.name].status] if proofs else []
        tool_rows.append([t.name, t.kind, *proven, params, t.description.splitlines()[0] if t.description else ""])
    tool_cols = [Col("tool", "id"), Col("kind"), *([Col("proven")] if proofs else []), Col("parameters", "text"),
                 Col("summary", "text", drop=1)]
    console.print(fit_table(tool_cols, tool_rows, console.width, title="Tools"))
    gone = [p for p in proofs.values() if p.tool not in {t.name for t in sk.tools}]
    for proof in gone:
        console.print(f"  {escape(proof.tool)}: {proof.status} ({escape(proof.detail[:200])})", overflow="fold")
    rows = scenario_index(scenarios_path(env, sk.id, scen_root))  # the index: large states are not parsed
    if rows:
        scenario_cols = [Col("id", "id"), Col("title", "text"), Col("checks", justify="right"),
                         Col("solution calls", drop=1, justify="right")]
        cells = [[str(row["id"]), row_title(row), str(row["checks"]), str(row["solution_calls"])] for row in rows]
        console.print(fit_table(scenario_cols, cells, console.width, title=f"Scenarios ({len(rows)})"))
    else:
        console.print("No bundled scenarios.")


def _type_label(schema: JSONObject) -> str:
    enum, kind, items, any_of = schema.get("enum"), schema.get("type"), schema.get("items"), schema.get("anyOf")
    if isinstance(enum, list):
        return "|".join(json.dumps(v) for v in enum)
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(items, dict):
        return f"array[{_type_label(items)}]"
    if kind:
        return str(kind)
    if isinstance(any_of, list):
        return "|".join(_type_label(s) if isinstance(s, dict) else "any" for s in any_of)
    return "any"


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.add_typer(catalog_app, name="catalog")
    app.command("list")(list_cmd)
    app.command("show")(show_cmd)
