"""Which of an environment's requirements (EnvSkeleton.requirements) are not installed in this Python."""

from __future__ import annotations

import re
from importlib import metadata

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def missing_requirements(requirements: list[str]) -> list[str]:
    """The requirements whose distribution is not installed here (versions are the installer's business)."""
    missing = []
    for requirement in requirements:
        match = _NAME.match(requirement)
        try:
            metadata.distribution(match.group(0) if match else requirement)
        except metadata.PackageNotFoundError:
            missing.append(requirement)
    return missing
