"""Render an EnvSkeleton (+ scenarios) into a standalone MCP server folder, byte for byte deterministic."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from envscaler_mcp._io import FileStamps, file_stamps
from envscaler_mcp.catalog.paths import templates_dir
from envscaler_mcp.catalog.store import StoredScenarios
from envscaler_mcp.errors import RenderError, UnrenderableSkeleton
from envscaler_mcp.render import clients
from envscaler_mcp.render.naming import (
    check_identifier,
    check_tool_name,
    dashed_name,
    package_name,
    safe_env_id,
)
from envscaler_mcp.render.writing import StreamedFile, compile_error
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scenario.titles import shown_title
from envscaler_mcp.skeleton.models import EnvSkeleton, canonical_json

TEMPLATE_VERSION = "1"
MCP_REQUIREMENT = "mcp>=2.3,<3"
SERVER_VERSION = "0.1.0"
MANIFEST = "manifest.json"


def server_templates() -> Path:
    """Folder of the server templates (templates/server)."""
    return templates_dir() / "server"


def _hashed_files() -> list[Path]:
    """The files templates_hash covers: every template file, then the renderer's own modules."""
    root = server_templates()
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return [*files, Path(__file__), Path(clients.__file__)]


_templates_hashes: dict[FileStamps, str] = {}


def templates_hash() -> str:
    """sha256 over every template file and the renderer's own code (path + bytes), so an edit to either
    makes rendered servers stale. Worked out once per process while none of those files changes: the value is
    kept under each file's path, size, modification time and inode (os.stat), and a stat differing from the
    one kept (an edit, a replaced file, a file added or removed) works it out again."""
    files = _hashed_files()
    stamp = file_stamps(files)
    known = _templates_hashes.get(stamp)
    if known is not None:
        return known
    root = server_templates()
    digest = hashlib.sha256(TEMPLATE_VERSION.encode())
    for path in files[:-2]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for module in files[-2:]:
        digest.update(module.name.encode() + b"\0" + module.read_bytes() + b"\0")
    value = digest.hexdigest()
    _templates_hashes.clear()
    _templates_hashes[stamp] = value
    return value



@dataclass(frozen=True)
class Fingerprint:
    """What a rendering is made of, hashed: the skeleton, the scenarios and the templates (with the renderer's
    code). Worked out once where one target is checked and maybe rendered (launch/target.py)."""

    skeleton: str
    scenarios: str
    templates: str


def fingerprint(skeleton: EnvSkeleton, scenarios: Iterable[Scenario]) -> Fingerprint:
    """The Fingerprint of rendering `skeleton` with `scenarios`."""
    return Fingerprint(skeleton.content_hash(), scenarios_hash(scenarios), templates_hash())


def scenarios_hash(scenarios: Iterable[Scenario]) -> str:
    """Stable hash of a scenario set (order matters: it is the order of the prompts): canonical_hash of the
    list of dumped scenarios, worked out one scenario at a time."""
    digest = hashlib.sha256(b"[")
    for n, s in enumerate(scenarios):
        digest.update((b"," if n else b"") + canonical_json(s.model_dump(mode="json")).encode())
    digest.update(b"]")
    return digest.hexdigest()


def _scenario_chunks(scenarios: Iterable[Scenario]) -> Iterator[bytes]:
    """data/scenarios.json: a JSON array with one compact item per line (small, and diffs stay per item)."""
    first = True
    for s in scenarios:
        item = {"id": s.id, "title": s.title, "task": s.task, "initial_state": s.initial_state}
        yield (b"[\n" if first else b",\n") + json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode()
        first = False
    yield b"[]\n" if first else b"\n]\n"


def _dump(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _jinja() -> jinja2.Environment:
    """The templates' environment: one per templates folder and process, so that a template is compiled once,
    not at every server rendered (four per server: about 20 ms of CPU each time); Jinja checks each template's
    file at every use and compiles it again when it changed."""
    return _jinja_for(str(server_templates()))


@cache
def _jinja_for(folder: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    env.filters["pystr"] = lambda s: repr(str(s))
    env.filters["pystr_body"] = lambda s: repr(str(s))[1:-1].replace('"""', r"\"\"\"")
    env.filters["toml_str"] = lambda s: json.dumps(str(s), ensure_ascii=False)
    env.filters["md_cell"] = lambda s: " ".join(str(s).split()).replace("|", r"\|")
    return env


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _instructions(skeleton: EnvSkeleton) -> str:
    text = f"{skeleton.name}: {skeleton.summary}\n\n{skeleton.introduction}".strip()
    if skeleton.rules:
        text += "\n\nRules:\n" + "\n".join(f"- {r}" for r in skeleton.rules)
    return text


def _headers(scenarios: Sequence[Scenario]) -> Sequence[Scenario]:
    """What the checks and the README need of the scenarios (ids, environment, title, task): a stored set's
    headers, with no state read or parsed; otherwise the scenarios themselves."""
    return scenarios.headers() if isinstance(scenarios, StoredScenarios) else scenarios


def _check(skeleton: EnvSkeleton, scenarios: Sequence[Scenario]) -> None:
    check_identifier(skeleton.class_name, "class name")
    seen: set[str] = set()
    for tool in skeleton.tools:
        check_tool_name(tool.name)
        if tool.name in seen:
            raise UnrenderableSkeleton(f"{skeleton.id}: tool '{tool.name}' is listed twice")
        seen.add(tool.name)
        if tool.input_schema.get("type") != "object":
            raise UnrenderableSkeleton(f"{skeleton.id}: tool '{tool.name}' input schema must have \"type\": \"object\" at its root")
    for attr in skeleton.state:
        check_identifier(attr.name, "state attribute")
    error = compile_error(skeleton.class_source.encode("utf-8"), f"<{skeleton.id} environment>")
    if error is not None:
        raise UnrenderableSkeleton(f"{skeleton.id}: class source does not compile: {error}") from error
    ids = [s.id for s in scenarios]
    if len(set(ids)) != len(ids) or any(not i for i in ids):
        raise UnrenderableSkeleton(f"{skeleton.id}: scenario ids must be present and unique (use Scenario.with_id())")
    for s in scenarios:
        if s.env_id != skeleton.id:
            raise UnrenderableSkeleton(f"scenario {s.id} is for environment '{s.env_id}', not '{skeleton.id}'")


def build_files(skeleton: EnvSkeleton, scenarios: Sequence[Scenario], *, expected: Fingerprint | None = None
                ) -> dict[str, bytes | StreamedFile]:
    """Every file of the server folder (relative path -> bytes; the scenarios' file streamed), including
    manifest.json. `scenarios` is gone through a few times, one scenario at a time; `expected`: the
    fingerprint of `skeleton` + `scenarios`, when already worked out (the scenarios' hash is a pass over them)."""
    headers = _headers(scenarios)
    _check(skeleton, headers)
    env_id = safe_env_id(skeleton.id)
    pkg, dist = package_name(skeleton.id), dashed_name(skeleton.id)
    registry = clients.registry_name(dist)
    ctx: dict[str, Any] = {
        "env_id": env_id, "package": pkg, "dist_name": dist, "script_name": dist, "version": SERVER_VERSION,
        "name": skeleton.name, "summary": skeleton.summary, "introduction": skeleton.introduction,
        "description": clients._clip(skeleton.summary or skeleton.name, 200), "rules": skeleton.rules,
        "mcp_requirement": MCP_REQUIREMENT, "requirements": skeleton.requirements, "registry_name": registry,
        "scenario_count": len(scenarios),
        "scenarios": [{"id": s.id, "title": shown_title(s.title, s.task)} for s in headers],
        "tools": [{"name": t.name, "kind": t.kind, "summary": _first_line(t.description)} for t in skeleton.tools],
        "state": [{"name": a.name, "type": a.type, "description": a.description} for a in skeleton.state],
    }
    jinja = _jinja()
    files: dict[str, bytes | StreamedFile] = {}
    for template, target in [("pyproject.toml.j2", "pyproject.toml"), ("README.md.j2", "README.md"),
                             ("package/__init__.py.j2", f"{pkg}/__init__.py"),
                             ("package/__main__.py.j2", f"{pkg}/__main__.py")]:
        try:
            files[target] = jinja.get_template(template).render(ctx).encode("utf-8")
        except jinja2.TemplateError as exc:
            raise RenderError(f"template {template} failed: {exc}") from exc
    source = skeleton.class_source if skeleton.class_source.endswith("\n") else skeleton.class_source + "\n"
    files[f"{pkg}/environment.py"] = source.encode("utf-8")
    for runtime_file in sorted((server_templates() / "runtime").glob("*.py")):
        files[f"{pkg}/runtime/{runtime_file.name}"] = runtime_file.read_bytes()
    spec = {
        "env_id": env_id, "name": skeleton.name, "summary": skeleton.summary,
        "class_name": skeleton.class_name, "server_name": dist, "script_name": dist, "version": SERVER_VERSION,
        "instructions": _instructions(skeleton), "state_names": [a.name for a in skeleton.state],
        "tools": [{"name": t.name, "kind": t.kind, "description": t.description, "input_schema": t.input_schema}
                  for t in skeleton.tools],
    }
    if skeleton.requirements:  # what launching it here needs installed (launch/requirements.py)
        spec["requirements"] = skeleton.requirements
    files[f"{pkg}/spec.json"] = _dump(spec)
    files[f"{pkg}/data/default_state.json"] = _dump(skeleton.default_state)
    files[f"{pkg}/data/scenarios.json"] = StreamedFile(lambda: _scenario_chunks(scenarios))
    files["server.json"] = _dump(clients.server_json(dist_name=dist, title=skeleton.name,
                                                     description=skeleton.summary or skeleton.name,
                                                     version=SERVER_VERSION))
    entry = clients.stdio_entry("uvx", [dist])
    for client, filename in clients.CLIENTS.items():
        files[f"clients/{filename}"] = _dump(clients.client_config(client, env_id.replace("_", "-"), entry))
    for rel, data in files.items():
        error = compile_error(data, rel) if rel.endswith(".py") and isinstance(data, bytes) else None
        if error is not None:
            raise RenderError(f"rendered file {rel} does not compile: {error}") from error
    hashes = expected or fingerprint(skeleton, scenarios)
    files[MANIFEST] = _dump({
        "env_id": env_id, "package": pkg, "skeleton_hash": hashes.skeleton,
        "scenarios_hash": hashes.scenarios, "template_version": TEMPLATE_VERSION,
        "templates_hash": hashes.templates, "mcp_requirement": MCP_REQUIREMENT,
        "files": {p: d.sha256() if isinstance(d, StreamedFile) else hashlib.sha256(d).hexdigest()
                  for p, d in sorted(files.items())},
    })
    return dict(sorted(files.items()))


def write_files(files: Mapping[str, bytes | StreamedFile], out_dir: Path) -> Path:
    """Replace `out_dir` with exactly `files` (written to a sibling temp folder, then swapped in)."""
    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    try:
        for rel, data in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, StreamedFile):
                data.write(target)
            else:
                target.write_bytes(data)
        swap_in(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir


def swap_in(folder: Path, out_dir: Path) -> None:
    """Replace `out_dir` with `folder` (a sibling on the same file system), the old one removed after."""
    old = None
    if out_dir.exists():
        old = out_dir.parent / f".{out_dir.name}.old-{folder.name[-8:]}"
        out_dir.rename(old)
    folder.rename(out_dir)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def render_server(skeleton: EnvSkeleton, scenarios: Sequence[Scenario], out_dir: Path, *,
                  expected: Fingerprint | None = None) -> Path:
    """Render the server of `skeleton` into `out_dir` (replaced), returning its path. Deterministic.
    `expected`: the fingerprint of `skeleton` + `scenarios`, when already worked out."""
    return write_files(build_files(skeleton, scenarios, expected=expected), out_dir)


def read_manifest(server_dir: Path) -> dict[str, Any] | None:
    """The manifest of a rendered server, or None when there is none (or it is unreadable)."""
    try:
        value = json.loads((Path(server_dir) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def is_current(server_dir: Path, skeleton: EnvSkeleton, scenarios: Sequence[Scenario], *,
               expected: Fingerprint | None = None) -> bool:
    """True when `server_dir` was rendered from exactly this skeleton, these scenarios and these templates,
    and none of its files was changed since (`expected`: their fingerprint, when already worked out)."""
    return verified_files(server_dir, expected or fingerprint(skeleton, scenarios)) is not None


def verified_files(server_dir: Path, expected: Fingerprint) -> dict[str, str] | None:
    """The files of `server_dir` (relative path -> sha256, from its manifest) when it was rendered with the
    `expected` fingerprint and every file listed is on disk with that digest (each read once, in chunks: a
    server's scenarios file may be large); None otherwise."""
    files = listed_files(server_dir, expected)
    return files if files is not None and digests_hold(server_dir, files) else None


def listed_files(server_dir: Path, expected: Fingerprint) -> dict[str, str] | None:
    """The files its manifest lists (relative path -> sha256) when `server_dir` says it was rendered with the
    `expected` fingerprint; None otherwise. Reads the manifest only: `digests_hold` checks the files."""
    manifest = read_manifest(server_dir)
    if not manifest:
        return None
    wanted = {"skeleton_hash": expected.skeleton, "scenarios_hash": expected.scenarios,
              "template_version": TEMPLATE_VERSION, "templates_hash": expected.templates,
              "mcp_requirement": MCP_REQUIREMENT}
    if any(manifest.get(k) != v for k, v in wanted.items()):
        return None
    files = manifest.get("files")
    if not isinstance(files, dict):
        return None
    return {str(rel): str(digest) for rel, digest in files.items()}


def digests_hold(server_dir: Path, files: dict[str, str]) -> bool:
    """True when every file listed is on disk under `server_dir` with its sha256."""
    for rel, digest in files.items():
        path = Path(server_dir) / rel
        if not path.is_file():
            return False
        with path.open("rb") as f:
            if hashlib.file_digest(f, "sha256").hexdigest() != digest:
                return False
    return True
