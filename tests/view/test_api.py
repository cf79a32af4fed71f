"""The viewer's pages and JSON without a browser: runs, a run's episodes, an episode's evidence, failures,
the comparison, the live endpoint, and bad run folders shown as such (never a 500); nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from envscaler_mcp.view.app import create_app


def _client(*roots: Path) -> TestClient:
    return TestClient(create_app(list(roots)), raise_server_exceptions=False)


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_runs_and_episodes(runs_root: Path) -> None:
    before = _digest(runs_root)
    c = _client(runs_root)
    runs = {r["name"]: r for r in c.get("/api/runs").json()["runs"]}
    assert set(runs) == {"oracle", "idle"}
    assert runs["oracle"]["success"] == 1.0 and runs["idle"]["success"] == 0.0
    assert runs["oracle"]["episodes"] == 2 and runs["oracle"]["finished"] is True
    episodes = c.get("/api/runs/idle").json()["episodes"]
    assert [e["success"] for e in episodes] == [False, False]
    assert all("checklist" in e["failing"] for e in episodes)
    page = c.get("/runs/oracle/episodes/0")
    assert page.status_code == 200 and "initial-state" in page.text and "O-1002" in page.text
    assert _digest(runs_root) == before  # the viewer never writes to run folders


def test_failures_and_comparison(runs_root: Path) -> None:
    c = _client(runs_root)
    failures = c.get("/api/runs/idle/failures").json()
    assert failures["not_succeeded"] == 2 and failures["by_kind"]["checklist"] == 2
    assert c.get("/api/runs/oracle/failures").json()["by_kind"] == {}
    rows = c.get("/api/compare?a=idle&b=oracle").json()["rows"]
    assert len(rows) == 2 and {r["flip"] for r in rows} == {"fixed"}
    assert c.get("/api/compare?a=idle").status_code == 400
    html = c.get("/compare?a=oracle&b=idle").text
    assert "2 worse" in html


def test_the_live_endpoint_returns_only_new_episodes(runs_root: Path, tmp_path: Path) -> None:
    run = tmp_path / "live"
    shutil.copytree(runs_root / "oracle", run)
    lines = (run / "results.jsonl").read_bytes().splitlines(keepends=True)
    (run / "summary.json").unlink()
    (run / "results.jsonl").write_bytes(lines[0] + lines[1][:50])  # the second record half written
    c = _client(tmp_path)
    first = c.get("/api/runs/live/since?from=0").json()
    assert len(first["episodes"]) == 1 and first["next"] == 1
    assert any("incomplete" in p for p in first["problems"])
    (run / "results.jsonl").write_bytes(lines[0] + lines[1])  # the write completes
    second = c.get(f"/api/runs/live/since?from={first['next']}&index=1").json()
    assert [e["index"] for e in second["episodes"]] == [1] and second["next"] == 2
    assert c.get("/api/runs/live").json()["run"]["finished"] is False


@pytest.mark.parametrize("damage", ["torn", "garbage-line", "no-manifest", "bad-manifest", "empty"])
def test_bad_run_folders_are_shown_as_such(runs_root: Path, tmp_path: Path, damage: str) -> None:
    run = tmp_path / "bad"
    shutil.copytree(runs_root / "oracle", run)
    results = run / "results.jsonl"
    if damage == "torn":
        results.write_bytes(results.read_bytes()[:-40])
    elif damage == "garbage-line":
        results.write_bytes(b'{"not": "an episode"}\nnot json at all\n' + results.read_bytes())
    elif damage == "no-manifest":
        (run / "run.json").unlink()
    elif damage == "bad-manifest":
        (run / "run.json").write_text("{")
    else:
        results.write_bytes(b"")
    c = _client(tmp_path)
    for url in ("/", "/runs/bad", "/runs/bad/failures", "/api/runs/bad", "/compare?a=bad&b=bad"):
        response = c.get(url)
        assert response.status_code == 200, (url, response.text[:300])
    problems = c.get("/api/runs").json()["runs"][0]["problems"]
    if damage != "empty":
        assert problems, damage
    if damage in ("torn", "garbage-line"):
        assert any("line" in p for p in problems)
        assert json.loads(c.get("/api/runs/bad").text)["episodes"]  # what could be read is shown


def test_unknown_runs_and_episodes_are_404_not_500(runs_root: Path) -> None:
    c = _client(runs_root)
    assert c.get("/runs/nope").status_code == 404
    assert c.get("/runs/oracle/episodes/99").status_code == 404
    assert c.get("/api/runs/oracle/episodes/99").json()["error"]
    assert c.get("/api/runs/oracle/since?from=x").status_code == 400


def test_non_loopback_hosts_are_refused_without_the_flag(runs_root: Path) -> None:
    import subprocess
    import sys

    def view(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "envscaler_mcp", "view", *args], capture_output=True,
                              text=True, timeout=120)

    result = view(str(runs_root), "--host", "0.0.0.0")
    assert result.returncode == 2 and "--allow-remote" in result.stderr and "Traceback" not in result.stderr
    missing = view(str(runs_root / "nowhere"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
