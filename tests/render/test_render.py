"""render_server / ensure_rendered: deterministic, self-contained, compiled, with a manifest."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp.errors import RenderError
from envscaler_mcp.render import build_files, ensure_rendered, is_current, read_manifest, render_server
from envscaler_mcp.render.naming import dashed_name, package_name, safe_env_id
from tests.render.fixture_env import scenarios, skeleton


def test_render_is_deterministic_and_replaces_the_folder(tmp_path: Path) -> None:
    a = render_server(skeleton(), scenarios(), tmp_path / "a")
    b = render_server(skeleton(), scenarios(), tmp_path / "b")
    files_a = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    (a / "stale.txt").write_text("old")
    render_server(skeleton(), scenarios(), a)
    assert not (a / "stale.txt").exists()


def test_layout_and_contents(tmp_path: Path) -> None:
    out = render_server(skeleton(), scenarios(), tmp_path / "srv")
    pkg = out / "fixture_shop_mcp"
    for rel in ["pyproject.toml", "README.md", "server.json", "manifest.json", "clients/claude_desktop.json",
                "clients/cursor.json", "clients/vscode.json"]:
        assert (out / rel).is_file(), rel
    assert (pkg / "environment.py").read_text() == skeleton().class_source
    spec = json.loads((pkg / "spec.json").read_text())
    assert [t["name"] for t in spec["tools"]] == [t.name for t in skeleton().tools]
    assert spec["state_names"] == ["items", "orders", "log", "counter"]
    served = json.loads((pkg / "data" / "scenarios.json").read_text())
    assert [set(s) for s in served] == [{"id", "title", "task", "initial_state"}] * 2
    assert "check_func" not in (pkg / "data" / "scenarios.json").read_text()  # validators are never served
    assert json.loads((pkg / "data" / "default_state.json").read_text()) == skeleton().default_state
    pyproject = (out / "pyproject.toml").read_text()
    assert 'fixture-shop-mcp = "fixture_shop_mcp.runtime.cli:main"' in pyproject
    assert '"mcp>=2.3,<3"' in pyproject
    assert "mcp-name: io.github.envscaler-mcp/fixture-shop-mcp" in (out / "README.md").read_text()


def test_server_is_standalone(tmp_path: Path) -> None:
    out = render_server(skeleton(), scenarios(), tmp_path / "srv")
    for path in out.rglob("*.py"):
        text = path.read_text()
        assert "envscaler_mcp" not in text, path
        compile(text, str(path), "exec")
    # runs with only the package folder on the path (no envscaler_mcp importable from the cwd)
    result = subprocess.run([sys.executable, "-m", "fixture_shop_mcp", "--list-scenarios"], cwd=out,
                            env={"PYTHONPATH": str(out), "PATH": "/usr/bin:/bin"}, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [s.id for s in scenarios()]


def test_server_json_and_client_configs(tmp_path: Path) -> None:
    out = render_server(skeleton(), scenarios(), tmp_path / "srv")
    server = json.loads((out / "server.json").read_text())
    assert server["$schema"].endswith("/2025-12-11/server.schema.json")
    assert re.fullmatch(r"[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+", server["name"]) and len(server["name"]) <= 200
    assert len(server["description"]) <= 100 and len(server["title"]) <= 100
    assert server["packages"][0]["transport"] == {"type": "stdio"}
    assert server["packages"][0]["identifier"] == "fixture-shop-mcp"
    vscode = json.loads((out / "clients" / "vscode.json").read_text())
    assert vscode == {"servers": {"fixture-shop": {"type": "stdio", "command": "uvx", "args": ["fixture-shop-mcp"]}}}
    claude = json.loads((out / "clients" / "claude_desktop.json").read_text())
    assert claude == {"mcpServers": {"fixture-shop": {"command": "uvx", "args": ["fixture-shop-mcp"]}}}


def test_manifest_and_currency(tmp_path: Path) -> None:
    out = render_server(skeleton(), scenarios(), tmp_path / "srv")
    manifest = read_manifest(out)
    assert manifest is not None
    assert manifest["skeleton_hash"] == skeleton().content_hash()
    assert manifest["mcp_requirement"] == "mcp>=2.3,<3"
    assert is_current(out, skeleton(), scenarios())
    assert not is_current(out, skeleton(), scenarios()[:1])
    changed = skeleton().model_copy(update={"summary": "Another summary."})
    assert not is_current(out, changed, scenarios())
    (out / "fixture_shop_mcp" / "environment.py").write_text("# edited\n")
    assert not is_current(out, skeleton(), scenarios())


def test_ensure_rendered_uses_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    first = ensure_rendered(skeleton(), scenarios())
    stamp = (first / "manifest.json").stat().st_mtime_ns
    assert ensure_rendered(skeleton(), scenarios()) == first
    assert (first / "manifest.json").stat().st_mtime_ns == stamp
    other = ensure_rendered(skeleton(), [])
    assert other != first and first.parent == other.parent == tmp_path / "servers"


def test_names_are_sanitised() -> None:
    assert safe_env_id("My Shop-2") == "my_shop_2"
    assert safe_env_id("3d printer") == "env_3d_printer"
    assert package_name("online-bank") == "online_bank_mcp"
    assert dashed_name("online_bank") == "online-bank-mcp"
    with pytest.raises(RenderError):
        safe_env_id("!!!")


@pytest.mark.parametrize("field,value,message", [
    ("tool_name", "get-item", "not usable"),
    ("tool_name", "class", "not usable"),
    ("tool_name", "x" * 65, "not usable"),
    ("class_name", "Bad Name", "class name"),
    ("source", "def broken(:\n", "does not compile"),
    ("schema", {"type": "array"}, "must have"),
])
def test_bad_skeletons_are_refused(field: str, value: object, message: str) -> None:
    sk = skeleton()
    if field == "tool_name":
        sk.tools[0] = sk.tools[0].model_copy(update={"name": value})
    elif field == "class_name":
        sk = sk.model_copy(update={"class_name": value})
    elif field == "source":
        sk = sk.model_copy(update={"class_source": value})
    else:
        sk.tools[0] = sk.tools[0].model_copy(update={"input_schema": value})
    with pytest.raises(RenderError, match=message):
        build_files(sk, scenarios())


def test_scenarios_of_another_env_are_refused() -> None:
    other = scenarios()[0].model_copy(update={"env_id": "other"})
    with pytest.raises(RenderError, match="not 'fixture_shop'"):
        build_files(skeleton(), [other])


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    sk = skeleton().model_copy(update={"name": 'Shop """ \\ {{ x }} | "quoted"', "summary": 'a "b" | c\nd'})
    out = render_server(sk, [], tmp_path / "srv")
    import tomllib

    data = tomllib.loads((out / "pyproject.toml").read_text())
    assert data["project"]["description"].startswith('a "b" | c')
    compile((out / "fixture_shop_mcp" / "__init__.py").read_text(), "init", "exec")


def test_concurrent_ensure_rendered_calls_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda _: ensure_rendered(skeleton(), scenarios()), range(4)))
    assert len(set(paths)) == 1 and is_current(paths[0], skeleton(), scenarios())
    assert [p.name for p in (tmp_path / "servers").iterdir()] == [paths[0].name]  # no staging leftovers
