"""The episode zygote is a fresh interpreter at every start of a server whose episodes run in processes of their
own: what it imports is paid once per server (benchmarks/README.md). Its own module and the runtime modules it
imports keep heavy standard library modules they need only for annotations or conveniences out of it; this test
shows it by effect, in a fresh interpreter started as the launcher starts the zygote (`-s -P`, with `site`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from envscaler_mcp.catalog.paths import generated_servers_dir
from envscaler_mcp.render.codecache import write_code_cache

KEPT_OUT = ("typing", "dataclasses", "inspect", "pathlib", "ast", "_hashlib", "hashlib", "urllib.parse")

_ZYGOTE_IMPORTS = """
import importlib, json, sys
import envscaler_mcp.isolation.episode_zygote  # the zygote's own module, as `-m` runs it
sys.path.append(sys.argv[1])
package = sys.argv[2]
zygote = importlib.import_module(package + ".runtime.zygote")
from importlib import import_module
load_package = import_module(package + ".runtime.package").load_package
data = load_package(import_module(package + ".runtime.package").PACKAGE_DIR, package, import_class=False)
code, names = import_module(package + ".runtime.codecache").prepared(
    importlib.util.find_spec(package + ".environment").origin)
print(json.dumps({"modules": sorted(sys.modules), "state": len(data.default_state), "code": code is not None}))
"""


def test_the_episode_zygote_imports_no_heavy_module_it_does_not_use(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    shutil.copytree(generated_servers_dir() / "clinic_appointments", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    package = "clinic_appointments_mcp"
    assert write_code_cache(folder, package)  # as the launcher does before the server starts
    out = subprocess.run([sys.executable, "-s", "-P", "-c", _ZYGOTE_IMPORTS, str(folder), package],
                         capture_output=True, text=True, check=True, cwd=Path(folder).parent).stdout
    seen = json.loads(out)
    assert seen["code"] and seen["state"] > 0  # the runtime did its work: package data read, module compiled
    assert f"{package}.runtime.zygote" in seen["modules"] and "json" in seen["modules"]
    assert [name for name in KEPT_OUT if name in seen["modules"]] == []
