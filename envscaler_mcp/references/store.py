"""Reference final states kept across runs, by content: the same server (every file of its package but the
bundled scenarios: the environment's code, the runtime, the tools' input schemas, the state's names, the default
state), the same scenario (initial state, reference solution, state-check options, free fields) and the same
success convention give the same replays, so a run reuses an earlier run's instead of replaying twice per
scenario.

Two files per reference under <user cache>/references/ (`_io.user_cache_dir`), named by the hash of
everything the replays depend on, the package version included (it fixes the server runtime): `<name>.state`
holds the final state's JSON exactly as the server wrote it (so a run compares an agent's final state with it
byte for byte first, `Reference.check`), then `<name>.json` the calls, the nondeterministic fields and the
diff of the initial state to the final state, written last (a reference is there when that file is). Any
change to the environment or the scenario changes the name, so a stale entry is never read; only references
whose replays succeeded and agreed are written (a failure may be the machine's, not the scenario's).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from envscaler_mcp import __version__
from envscaler_mcp._io import atomic_write_bytes, json_text, read_json, user_cache_dir
from envscaler_mcp._json import encode_json, parse_state
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.compare.diff import StateChange
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.references.reference import Reference, scenario_free_fields
from envscaler_mcp.references.replay import ReplayCall
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import FreeField, canonical_hash

# 3: the calls whose results differ between replays (the observation check skips them); 4: named by every file
# of the server's package (spec.json's input schemas and state names, the default state, not only its Python)
# and by the success convention; 5: the diff of the initial state to the final state kept with it (a run no longer
# works it out again for every scenario)
FORMAT = 5


def _state_path(path: Path) -> Path:
    return path.with_suffix(".state")


class ReferenceStore:
    """References on disk, keyed by the environment's content hash and the scenario's content."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else user_cache_dir() / "references"

    def path(self, env_hash: str, scenario_key: Any, env_free: Sequence[FreeField],
             convention: str = DEFAULT_CONVENTION) -> Path:
        """The file of one reference: named by the server's content (`env_hash`: launch/target.py
        ServerDir.code_hash), the scenario's (`scenario_key`), the environment's free fields and the success
        convention its calls' results are read under (a call one convention reads as failed stops the replay)."""
        free = [[f.path, f.reason] for f in env_free]
        name = canonical_hash([FORMAT, __version__, env_hash, scenario_key, free, convention])
        return self.folder / f"{name}.json"

    def load(self, path: Path, scenario: Scenario, env_free: Sequence[FreeField]) -> Reference | None:
        """The stored reference, or None (absent or unreadable: it is then replayed and written again)."""
        try:
            data = read_json(path)
            calls = [ReplayCall.model_validate(c) for c in data["calls"]]
            nondeterministic = [(str(p), str(r)) for p, r in data["nondeterministic"]]
            unstable = [int(n) for n in data["unstable_results"]]
            final = parse_state(_state_path(path).read_bytes())
            turn_states = [dict(t) for t in data.get("turn_states", [])]
            diff = [StateChange.model_validate(c) for c in data["diff_from_initial"]]
        except (InputFileError, OSError, KeyError, TypeError, ValueError, ValidationError):
            return None
        if final is None:
            return None
        free = scenario_free_fields(scenario, env_free)
        return Reference(scenario=scenario, final_state=final, calls=calls, nondeterministic=nondeterministic,
                         unstable_results=unstable,
                         free=free + FreeFields(nondeterministic) if nondeterministic else free,
                         turn_states=turn_states, _diff=diff)

    def save(self, path: Path, reference: Reference) -> None:
        """Keep a reference whose replays succeeded and agreed; a write that fails only costs a replay later."""
        if reference.unavailable or reference.final_state is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # A cache: each file is renamed whole, but not fsync'd (1-2 ms of the disk's time each). After a crash
            # a file may be empty or torn, which `load` reads as absent (replayed and written again); names are
            # content hashes, so no file can hold another reference's bytes.
            atomic_write_bytes(_state_path(path), encode_json(reference.final_state), durable=False)
            entry = {"nondeterministic": [list(p) for p in reference.nondeterministic],
                     "turn_states": reference.turn_states,
                     "unstable_results": reference.unstable_results,
                     "diff_from_initial": [c.model_dump(mode="json") for c in reference.diff_from_initial()],
                     "calls": [{**c.model_dump(mode="json"), "result_text": c.result_text, "is_error": c.is_error}
                               for c in reference.calls]}
            atomic_write_bytes(path, json_text(entry, indent=None).encode("utf-8"), durable=False)
        except OSError:
            pass
