"""What a run is: its configuration (run.json) and its plan (environments x scenarios x trials)."""

from __future__ import annotations

import importlib.metadata
import platform
import shlex
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, Field, field_serializer, model_validator

from envscaler_mcp import __version__
from envscaler_mcp._choices import default_concurrency
from envscaler_mcp._outcome import DEFAULT_CONVENTION, SuccessConvention
from envscaler_mcp.catalog.hashed import skeleton_facts
from envscaler_mcp.catalog.store import (
    ScenarioLine,
    list_env_ids,
    load_scenario_line,
    scenario_headers,
    scenarios_path,
)
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.oracle import ORACLE
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.launch import EpisodeProcess, Transport
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import FreeField, canonical_hash

# Fields that may change between a run and its resumption.
_RESUMABLE_FIELDS = {"concurrency", "progress", "ray", "ray_workers", "workers"}


class RunConfig(BaseModel):
    """A run's configuration, as given on the command line (never holds secrets: keys come from the env)."""

    envs: list[str] = Field(
        default_factory=list, description="Environment ids (or skeleton paths) to evaluate."
    )
    all_envs: bool = Field(False, description="Evaluate every bundled environment.")
    scenarios_file: str | None = Field(
        None, description="Scenario set (JSONL) instead of the bundled scenarios."
    )
    scenario_ids: list[str] | None = Field(None, description="Only these scenario ids.")
    limit: int | None = Field(None, ge=1, description="At most this many scenarios per environment.")
    server_cmd: str | None = Field(None, description="External stdio server command (no admin plane).")
    url: str | None = Field(None, description="External Streamable HTTP server URL (no admin plane).")
    agent: str = Field(description="Agent seat: provider/model (or 'oracle', 'mock').")
    agent_base_url: str | None = Field(None, description="Base URL of an OpenAI-compatible agent endpoint.")
    user: str | None = Field(None, description="Simulated-user seat: provider/model (conversation mode).")
    trials: int = Field(1, ge=1, description="Trials per scenario (for pass@k and pass^k).")
    concurrency: int = Field(4, ge=1, description="Episodes run at the same time (when not given: _choices."
                                                   "default_concurrency of the seats).")
    transport: Transport = Field(
        "pipe",
        description="'pipe': one server process per environment over its stdin/stdout, every episode named per "
        "request; 'http': one shared HTTP server per environment; 'stdio': one server process per episode; "
        "'memory': in process (tests, benchmarks).",
    )
    episode_process: EpisodeProcess = Field(
        "auto",
        description="'fork': every episode in a process of its own, forked from a zygote of its server (one "
        "episode's environment code cannot reach another's state or the admin token); 'shared': a server's "
        "episodes in one process; 'auto': fork unless the environment is hand-authored.",
    )
    validator_timeout_s: float = Field(2.0, gt=0, description="Time limit of one validator.")
    episode: EpisodeConfig = Field(default_factory=EpisodeConfig, description="Per-episode settings.")
    progress: bool = Field(True, description="Show the progress bar.")
    ray: str | None = Field(
        None, description="Run the episodes on a Ray cluster: 'auto' (the running one), 'local' or an address."
    )
    ray_workers: int | None = Field(
        None, ge=1, description="Ray actors (default: the cluster's CPUs); each runs `concurrency` episodes."
    )

    workers: int = Field(
        1, ge=1, description="Local worker processes the episodes ran on (`--workers`; 1: this process); "
        "`concurrency` is shared by them.",
    )

    @model_validator(mode="before")
    @classmethod
    def _seats_concurrency(cls, data: Any) -> Any:
        """`concurrency` not given (or None): the default of the run's seats, wherever a run is configured."""
        if isinstance(data, dict) and data.get("concurrency") is None and isinstance(data.get("agent"), str):
            user = data.get("user")
            data = {**data, "concurrency": default_concurrency(data["agent"], user if isinstance(user, str) else None)}
        return data

    @field_serializer("agent_base_url", "url")
    def _no_credentials(self, value: str | None) -> str | None:
        """Never write credentials embedded in a URL (user:password@, query string) to run.json."""
        return redact_url(value) if value else value

    def resume_key(self) -> dict[str, Any]:
        """The fields a resumed run must share with the original."""
        return self.model_dump(mode="json", exclude=_RESUMABLE_FIELDS)


def redact_url(url: str) -> str:
    """The URL without user info and query string."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    if "@" not in parts.netloc and not parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class EnvPlan(BaseModel):
    """One environment of a run: what the agent is told, its scenarios, and content hashes.

    Scenarios read from a catalog file are not held (`scenarios` empty): only where each line is (`lines`, in
    the run's order), so a plan of 10,000 scenarios holds their ids and digests. `headers()` reads them back,
    without their initial states, when the environment's turn comes; `full(scenario)` reads one in full when
    its episode starts."""

    env_id: str
    target: str = Field(
        "", description="What to launch: the env id, or the folder/skeleton path given (default env_id)."
    )
    env_info: EnvInfo
    scenarios: list[Scenario]
    hashes: dict[str, str | None] = Field(
        default_factory=dict, description="environment/scenarios/validators hashes."
    )
    free_fields: list[FreeField] = Field(
        default_factory=list, description="The environment's free fields, for the state check."
    )
    success_convention: SuccessConvention = Field(
        DEFAULT_CONVENTION, description="How the environment reports a failed call (skeleton.success_convention; "
        "'error-field' for a server without a skeleton)."
    )
    scenario_file: str | None = Field(
        None, description="The JSONL file the scenarios are read from in full (None: `scenarios` are complete)."
    )
    lines: dict[str, ScenarioLine] = Field(
        default_factory=dict, description="Per scenario id: where its line is in `scenario_file`."
    )

    def scenario_ids(self) -> list[str]:
        """The ids of the plan's scenarios, in the run's order (no scenario read)."""
        return [s.id for s in self.scenarios] if self.scenarios else list(self.lines)

    def count(self) -> int:
        """How many scenarios the plan has (no scenario read)."""
        return len(self.scenarios) if self.scenarios else len(self.lines)

    def headers(self) -> list[Scenario]:
        """The plan's scenarios without their initial states: `scenarios`, or read back from `scenario_file`
        (the lines the plan was made from: UsageError when the file changed since). Lines parsed here are kept
        in full for `full` (up to the bound of lines read lately): a run parses each line once."""
        if self.scenarios or self.scenario_file is None or not self.lines:
            return self.scenarios
        path = Path(self.scenario_file)
        found = {s.id: (s, line) for s, line in scenario_headers(path, set(self.lines), keep=True)}
        out = []
        for scenario_id, line in self.lines.items():
            scenario, now = found.get(scenario_id, (None, None))
            if scenario is None or now != line:
                raise UsageError(f"{path} changed while the run was using it (scenario {scenario_id} is no longer "
                                 "where it was); run again")
            out.append(scenario)
        return out

    def without_headers(self) -> EnvPlan:
        """The plan holding only where its scenarios are (when they can be read back from its file)."""
        if self.scenario_file is None or list(self.lines) != [s.id for s in self.scenarios]:
            return self
        return self.model_copy(update={"scenarios": []})

    def full(self, scenario: Scenario) -> Scenario:
        """The scenario with its initial state (read from the scenario file when the plan holds only a header)."""
        line = self.lines.get(scenario.id)
        if self.scenario_file is None or line is None:
            return scenario
        full = load_scenario_line(Path(self.scenario_file), line, scenario.id)
        if full.id != scenario.id:  # a line placed by an index that describes another file (edited by hand)
            raise UsageError(f"{self.scenario_file}: the line the plan holds for scenario {scenario.id} is scenario "
                             f"{full.id}; its index does not describe it (remove the index, *.index.json, to read "
                             "the file again)")
        return full


class RunManifest(BaseModel):
    """run.json: enough to reproduce a run and to refuse resuming it with something else."""

    run_id: str = Field(description="Run id.")
    created_at: str = Field(description="ISO-8601 UTC creation time.")
    config: RunConfig = Field(description="The run configuration.")
    versions: dict[str, str] = Field(description="envscaler-mcp, mcp and Python versions.")
    hashes: dict[str, dict[str, str | None]] = Field(
        description="Per environment: content hashes of the environment, its scenarios and their validators."
    )
    scenario_ids: dict[str, list[str]] = Field(description="Per environment: the scenario ids in the run.")
    isolation: dict[str, IsolationReport] = Field(
        default_factory=dict,
        description="The OS isolation actually in force: 'validators' (the validator sandbox) and 'server:<env>' "
        "(each environment's server processes); every layer, active or refused and why. Written as the run ends.",
    )


def versions() -> dict[str, str]:
    """Versions recorded in run.json."""
    return {
        "envscaler_mcp": __version__,
        "mcp": importlib.metadata.version("mcp"),
        "python": platform.python_version(),
    }


def scenario_hashes(scenarios: list[Scenario]) -> dict[str, str]:
    """Content hashes of a scenario list and of its validators alone."""
    return {
        "scenarios": canonical_hash([s.model_dump(mode="json") for s in scenarios]),
        "validators": canonical_hash([[s.id, [c.validator for c in s.checklist]] for s in scenarios]),
    }


def line_hashes(scenarios: list[Scenario], lines: dict[str, ScenarioLine]) -> dict[str, str]:
    """Content hashes of scenarios held as headers: the headers (validators included) and their lines' sha256."""
    hashes = scenario_hashes(scenarios)
    hashes["scenarios"] = canonical_hash([hashes["scenarios"], [lines[s.id].digest for s in scenarios]])
    return hashes


def _check_external(server: str | None, url: str | None) -> None:
    """An external server that cannot be reached at all is a usage error before the run, not a run of
    infrastructure errors."""
    if url is not None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--url: '{url}' is not an http(s) URL (e.g. http://127.0.0.1:8000/mcp)")
    if server is not None:
        try:
            program = shlex.split(server)[0]
        except (ValueError, IndexError):
            raise UsageError(f"--server: '{server}' is not a command line") from None
        if shutil.which(program) is None:
            raise UsageError(f"--server: '{program}' is not a program on PATH or an executable file")


def build_plan(config: RunConfig) -> list[EnvPlan]:
    """Resolve environments and scenarios; raise UsageError naming what is missing."""
    external = config.server_cmd or config.url
    if config.server_cmd and config.url:
        raise UsageError("pass either --server or --url, not both")
    _check_external(config.server_cmd, config.url)
    if external and not config.scenarios_file:
        raise UsageError(
            "an external server (--server/--url) needs --scenarios FILE: the harness cannot know "
            "its tasks otherwise"
        )
    wanted = set(config.scenario_ids) if config.scenario_ids is not None else None
    file_path = Path(config.scenarios_file) if config.scenarios_file else None
    file_scenarios = scenario_headers(file_path) if file_path else None
    if config.all_envs:
        env_ids = list_env_ids()
    elif config.envs:
        env_ids = list(config.envs)
    elif file_scenarios is not None:
        env_ids = sorted({s.env_id for s, _ in file_scenarios})
    else:
        raise UsageError("say which environments to evaluate: --env ENV (repeatable) or --all")
    if not env_ids:
        raise UsageError("no environments found to evaluate (the catalog is empty? check --home)")
    plans = []
    seen_ids: set[str] = set()
    unsolvable = Unsolvable() if config.agent.strip() == ORACLE else None
    for name in env_ids:
        env_id, env_info, env_hash, free, convention = _env_info(name, config, strict=not external)
        if file_scenarios is not None and file_path is not None:
            source: Path | None = file_path
            found = [(s, line) for s, line in file_scenarios
                     if s.env_id == env_id or (len(env_ids) == 1 and external)]
            if wanted is not None:
                found = [(s, line) for s, line in found if s.id in wanted]
        else:  # beside a skeleton folder, in its data home, or in the catalog; only the selected lines are read
            source = scenarios_path(name, env_id)
            found = scenario_headers(source, wanted, None if wanted else config.limit) if source.is_file() else []
        if wanted is not None:
            seen_ids.update(s.id for s, _ in found)
        found = found[: config.limit]
        scenarios = [s for s, _ in found]
        lines = {s.id: line for s, line in found}
        if unsolvable is not None:
            unsolvable.add(env_id, scenarios)
        if scenarios:
            plan = EnvPlan(
                env_id=env_id,
                target=name,
                env_info=env_info,
                scenarios=scenarios,
                hashes={"environment": env_hash, **line_hashes(scenarios, lines)},
                free_fields=free,
                success_convention=convention,
                scenario_file=str(source),
                lines=lines,
            )
            # a catalog's scenarios are read again when their environment's turn comes: a run's plan does not
            # grow with their headers (a shared --scenarios file is held whole anyway)
            plans.append(plan if file_scenarios is not None else plan.without_headers())
    unknown = [i for i in config.scenario_ids or [] if i not in seen_ids]
    if unknown:
        raise UsageError(f"--scenario-ids: no scenario {', '.join(repr(i) for i in unknown)} in "
                         f"{', '.join(env_ids)} (`envscaler-mcp show ENV` lists an environment's scenarios)")
    if not plans:
        raise UsageError("no scenarios selected: check --env, --scenarios, --scenario-ids and --limit")
    if unsolvable is not None:
        unsolvable.refuse()
    return plans


class Unsolvable:
    """The oracle replays reference solutions: scenarios without one are refused rather than scored 0 (counted
    as the plan is made, the first few named)."""

    def __init__(self) -> None:
        self.total = self.missing = 0
        self.named: list[str] = []

    def add(self, env_id: str, scenarios: list[Scenario]) -> None:
        self.total += len(scenarios)
        for s in scenarios:
            if not s.has_reference():
                self.missing += 1
                if len(self.named) < 5:
                    self.named.append(f"{env_id}/{s.id}")

    def refuse(self) -> None:
        if not self.missing:
            return
        shown = ", ".join(self.named) + (f" and {self.missing - 5} more" if self.missing > 5 else "")
        raise UsageError(
            f"--agent oracle replays each scenario's reference solution, and {self.missing} of the {self.total} "
            f"selected scenario(s) have none ({shown}), so the oracle cannot solve them. Scenarios imported from "
            "EnvScaler's files carry no reference solutions. Select scenarios that have one (--scenario-ids), or "
            "evaluate a model."
        )


def _env_info(name: str, config: RunConfig, strict: bool
              ) -> tuple[str, EnvInfo, str | None, list[FreeField], SuccessConvention]:
    """(env id, what the agent is told, environment hash, free fields, success convention); external servers
    may have no skeleton (their calls are read by the generic convention, error-field)."""
    try:
        facts = skeleton_facts(name)  # kept per skeleton file: the 280 kB skeleton is not read again
    except UsageError:
        if strict:
            raise
        return name, EnvInfo(name=name), canonical_hash(config.server_cmd or config.url), [], "error-field"
    info = EnvInfo(name=facts.name, introduction=facts.introduction, rules=facts.rules)
    return facts.id, info, facts.content_hash, list(facts.free_fields), facts.success_convention
