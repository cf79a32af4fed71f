"""Importing EnvScaler files into a data folder while reading them, one scenario in memory at a time.

Each scenario item is read from the file, converted and appended to its environment's scenario file as it
comes; an environment's skeleton is written when its first scenario (whose init_config is its default state)
arrives. Every output file grows as a temporary file beside its target and all are renamed into place at the
end, so a failure (a syntax error half-way through the file, a full disk) leaves the folder as it was. The
catalog index of each scenario file is built on the way. The environments are converted first, each written
to a temporary spool (interop/spool.py) and forgotten, so memory does not grow with their number. The result equals import_envscaler's, written by
save_skeleton and save_scenarios (scenario lines are pydantic's JSON: the same values, numbers possibly spelt
differently, e.g. 1e-5 for 1e-05).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from envscaler_mcp._io import PendingFiles, json_text
from envscaler_mcp._outcome import ConventionChoice
from envscaler_mcp.catalog.listing import Row, remember, row_of
from envscaler_mcp.catalog.store import index_row, skeleton_file, write_index_rows
from envscaler_mcp.interop.envscaler_format import iter_scenario_metadata
from envscaler_mcp.interop.from_envscaler import (
    Routing,
    converted_scenarios,
    error_lines,
    import_skips,
    prepare_envs,
    with_default_state,
)
from envscaler_mcp.interop.skips import Skipped
from envscaler_mcp.interop.spool import EnvSpool
from envscaler_mcp.skeleton.models import EnvSkeleton, Provenance


@dataclass(frozen=True)
class ImportedEnv:
    """What an import says of one environment it wrote (the skeleton itself is on disk, not kept)."""

    id: str
    source_id: str  # EnvScaler's env_id
    queries: int
    state_changes: int
    provenance: Provenance  # its notes: static-check findings, tool-kind disagreements

    @classmethod
    def of(cls, skeleton: EnvSkeleton) -> ImportedEnv:
        queries = sum(t.kind == "query" for t in skeleton.tools)
        return cls(skeleton.id, skeleton.provenance.source_id or skeleton.id, queries, len(skeleton.tools) - queries,
                   skeleton.provenance)


@dataclass
class WrittenImport:
    """What an import wrote: its environments (in file order), scenario counts by our env id, per-item problems
    (one line each) and the items they left out."""

    envs: list[ImportedEnv] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    duplicates: int = 0


def scenario_file(out: Path, env_id: str) -> Path:
    """Where an import writes an environment's scenarios: <out>/scenarios/<env id>.jsonl."""
    return Path(out) / "scenarios" / f"{env_id}.jsonl"


def stream_import(
    envs_path: Path, scenarios_path: Path | None, out: Path, *, skip_checks: bool = False, convention: ConventionChoice = "auto",
    contained: bool = False,
) -> WrittenImport:
    """Convert EnvScaler files into <out>/environments/<id>/skeleton.json and <out>/scenarios/<id>.jsonl (with
    their index). Problems with one env or scenario are collected, not raised; file-level problems (bad
    JSON, a missing field) raise InputFileError, with nothing written. `contained`: the environments' servers run
    under the OS layers, so static-check problems those contain are kept as warnings (skeleton/checks.py).
    Memory holds one scenario and a few skeletons: the prepared skeletons wait in an EnvSpool on disk."""
    with EnvSpool() as spool, tempfile.TemporaryDirectory(prefix="envscaler-import-rows-") as rows_dir:
        return _stream_import(envs_path, scenarios_path, Path(out), spool, Path(rows_dir), skip_checks=skip_checks,
                              convention=convention, contained=contained)


def _stream_import(envs_path: Path, scenarios_path: Path | None, out: Path, spool: EnvSpool, rows_dir: Path, *,
                   skip_checks: bool, convention: ConventionChoice, contained: bool) -> WrittenImport:
    """stream_import with the skeletons in `spool` and each environment's index rows (JSON lines) in `rows_dir`
    until the files are in place: memory holds neither."""
    prepared = prepare_envs(envs_path, skip_checks=skip_checks, convention=convention, contained=contained,
                            into=spool)
    written = WrittenImport()
    counts = written.counts  # our env id -> scenarios written
    listed: dict[str, Row] = {}
    routing = Routing()
    items = iter_scenario_metadata(scenarios_path) if scenarios_path else iter(())
    with PendingFiles() as pending:
        for owner, item, scenario in converted_scenarios(items, spool, routing):
            if owner.id not in counts:  # its first scenario: the skeleton's default state
                full = with_default_state(owner, item["init_config"])
                pending.append(skeleton_file(out / "environments", owner.id), json_text(full.model_dump(mode="json")))
                counts[owner.id] = 0
            pending.append(scenario_file(out, owner.id), scenario.model_dump_json() + "\n")  # 6x json.dumps' speed
            with (rows_dir / f"{owner.id}.jsonl").open("a", encoding="utf-8") as f:
                f.write(json.dumps(index_row(scenario)) + "\n")
            counts[owner.id] += 1
        for env_id in spool:  # file order; each skeleton read back once more, then forgotten
            skeleton = spool[env_id]
            written.envs.append(ImportedEnv.of(skeleton))
            listed[skeleton.id] = row_of(skeleton)
            if skeleton.id not in counts:
                empty = with_default_state(skeleton, {})
                pending.append(skeleton_file(out / "environments", skeleton.id),
                               json_text(empty.model_dump(mode="json")))
        pending.commit()
    remember(out / "environments", listed)  # `list` reads no skeleton of these
    for env_id in counts:  # one environment's rows in memory at a time
        with (rows_dir / f"{env_id}.jsonl").open(encoding="utf-8") as f:
            write_index_rows(scenario_file(out, env_id), [json.loads(line) for line in f])
    written.duplicates = routing.duplicates
    written.skipped = import_skips(prepared, routing.skipped, envs_path, scenarios_path)
    written.errors = error_lines(written.skipped)
    return written
