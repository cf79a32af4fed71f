"""Whether the packages an environment's code imports (skeleton.requirements, kept in the rendered spec.json)
are installed in this Python, which runs every server the harness launches, `serve` and `install` included.

A missing one is the user's setup, not the environment's fault: one clear error that names the `pip install`
to run, before any server starts, instead of episodes that fail on an ImportError inside the server.
"""

from __future__ import annotations

import shlex

from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch.target import ServerDir, read_spec
from envscaler_mcp.skeleton.requirements import missing_requirements


def check_requirements(server: ServerDir) -> None:
    """UsageError naming the packages to install when the server's environment needs some that are missing."""
    requirements = read_spec(server).get("requirements") or []
    missing = missing_requirements([str(r) for r in requirements])
    if missing:
        raise UsageError(f"environment {server.env_id} needs {', '.join(missing)}, not installed in this Python: "
                         f"pip install {' '.join(shlex.quote(r) for r in missing)}")
