"""An environment's requirements (EnvSkeleton.requirements): its rendered server depends on them, and launching
it with a package missing here is one clear error naming the install, before any server runs."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.servers import Transport
from envscaler_mcp.render.engine import build_files, render_server
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.skeleton.requirements import missing_requirements
from tests.foundation.test_cli_errors import run_main
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio
MISSING = "envscaler-no-such-package>=1.0"


def needing(*requirements: str) -> EnvSkeleton:
    return EnvSkeleton.model_validate({**skeleton().model_dump(mode="json"), "requirements": list(requirements)})


def test_only_packages_that_are_not_installed_are_missing() -> None:
    assert missing_requirements(["jsonschema>=4.20", MISSING, "pydantic"]) == [MISSING]


@pytest.mark.parametrize("bad", ["mpmath; os_name == 'nt'", 'x", "evil', "mpmath >= 1", "", "git+https://x/y"])
def test_a_requirement_is_a_name_and_version_clauses_only(bad: str) -> None:
    with pytest.raises(ValidationError):
        needing(bad)


def test_the_rendered_server_depends_on_the_requirements_and_others_are_unchanged() -> None:
    files = build_files(needing("mpmath>=1.3", "sympy"), scenarios())
    project = tomllib.loads(files["pyproject.toml"].decode())["project"]
    assert project["dependencies"][-2:] == ["mpmath>=1.3", "sympy"]
    assert "`mpmath>=1.3`, `sympy`" in files["README.md"].decode()
    assert json.loads(files["fixture_shop_mcp/spec.json"])["requirements"] == ["mpmath>=1.3", "sympy"]
    plain = build_files(skeleton(), scenarios())
    assert "requirements" not in json.loads(plain["fixture_shop_mcp/spec.json"])
    assert "requirements" not in skeleton().model_dump(mode="json")  # files and content hashes stay as they were
    assert not any("mpmath" in d for d in tomllib.loads(plain["pyproject.toml"].decode())["project"]["dependencies"])


@pytest.mark.parametrize("transport", ["memory", "pipe"])
async def test_launching_with_a_package_missing_names_the_install(transport: Transport) -> None:
    with pytest.raises(UsageError, match=r"needs envscaler-no-such-package>=1\.0, not installed in this Python: "
                                         r"pip install 'envscaler-no-such-package>=1\.0'"):
        async with launch_server(needing(MISSING), transport, scenarios=scenarios()):
            raise AssertionError("a server started")
    async with launch_server(needing("jsonschema>=4.20"), transport, scenarios=scenarios()) as server:
        async with server.episode(scenarios()[1].initial_state) as episode:
            assert list((await episode.get_state())["items"]) == ["i9"]


def test_serve_and_install_refuse_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = render_server(needing(MISSING), scenarios(), tmp_path / "server")
    config = tmp_path / "cursor.json"
    for args in (["serve", str(folder)], ["install", str(folder), "--client", "cursor", "--config", str(config)]):
        code, out, err = run_main(args, capsys)
        assert code == 2 and "Traceback" not in out + err
        assert err.strip().splitlines() == [f"error: environment fixture_shop needs {MISSING}, not installed in this "
                                            f"Python: pip install '{MISSING}'"]
    assert not config.exists()
