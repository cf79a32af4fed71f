"""A prebuilt llama-server that dies with an illegal instruction on this CPU: the start falls back to xllamacpp
and the machine remembers it (the fallback is shown by effect: a second runtime answers /health)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from envscaler_mcp.errors import ServerStartError
from envscaler_mcp.providers.local import server as srv

# A process that stops with SIGILL, as the prebuilt binary does on a CPU it was not built for.
_SIGILL = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
# A stand-in for the portable runtime: answers GET /health on the port it is given.
_HEALTHY = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"""


@pytest.fixture
def fake_runtimes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> srv.LocalServer:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(srv.tempfile, "tempdir", str(tmp_path))  # the servers' logs
    monkeypatch.setenv("ENVSCALER_MCP_BLOCK_REQUESTS", "0")  # loopback stand-ins only
    monkeypatch.setattr(srv, "cpu_flags", lambda: {"avx512f", "avx2"})
    monkeypatch.setattr(srv.importlib.util, "find_spec", lambda name: object())

    def command(self: srv.LocalServer) -> list[str]:
        script = _SIGILL if self.runtime == "llama-server" else _HEALTHY
        return [sys.executable, "-c", script, str(self.port)]

    monkeypatch.setattr(srv.LocalServer, "command", command)
    server = srv.LocalServer(model_path=tmp_path / "m.gguf", runtime="llama-server", prompt_cache=None)
    yield server
    server.stop()


def test_an_illegal_instruction_falls_back_and_is_remembered(fake_runtimes: srv.LocalServer,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert srv.runtime_status()["llama-server"] == "ok"
    url = fake_runtimes.ensure_started(timeout_s=60)
    assert fake_runtimes.runtime == "xllamacpp" and fake_runtimes.running()
    assert url.startswith("http://127.0.0.1:")
    assert "illegal instruction" in capsys.readouterr().err
    assert "illegal instruction" in srv.runtime_status()["llama-server"]
    assert srv.pick_runtime("auto") == "xllamacpp"  # the next process does not try it again
    logs = sorted(Path(srv.tempfile.tempdir).glob("envscaler-local-model-*.log"))
    assert len(logs) == 2 and fake_runtimes.log_path in logs  # the failed start's log is kept


def test_a_stopped_server_leaves_no_log(fake_runtimes: srv.LocalServer, tmp_path: Path) -> None:
    fake_runtimes.runtime = "xllamacpp"
    fake_runtimes.ensure_started(timeout_s=60)
    log = fake_runtimes.log_path
    assert log is not None and log.exists() and log.parent == tmp_path
    fake_runtimes.stop()
    assert not fake_runtimes.running() and not log.exists()
    assert not list(tmp_path.glob("envscaler-local-model-*"))


def test_other_start_failures_are_not_taken_for_the_cpu(fake_runtimes: srv.LocalServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(srv.LocalServer, "command",
                        lambda self: [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(ServerStartError, match="exited with code 3"):
        fake_runtimes.ensure_started(timeout_s=60)
    assert fake_runtimes.runtime == "llama-server"
    assert srv.runtime_status()["llama-server"] == "ok"
