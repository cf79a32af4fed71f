"""Names a generated server uses, sanitised and checked before they reach a template."""

from __future__ import annotations

import keyword
import re

from envscaler_mcp.errors import UnrenderableSkeleton

TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_NON_ID = re.compile(r"[^a-z0-9_]+")


def safe_env_id(env_id: str) -> str:
    """Lowercase snake_case form of an environment id, usable as a Python package prefix."""
    name = _NON_ID.sub("_", env_id.strip().lower()).strip("_")
    name = re.sub(r"_+", "_", name)
    if not name:
        raise UnrenderableSkeleton(f"environment id '{env_id}' has no usable characters; use lowercase snake_case")
    if name[0].isdigit():
        name = "env_" + name
    return name


def package_name(env_id: str) -> str:
    """Import name of the generated package: `<env>_mcp`."""
    return safe_env_id(env_id) + "_mcp"


def dashed_name(env_id: str) -> str:
    """Distribution and console-script name: `<env-with-dashes>-mcp`."""
    return safe_env_id(env_id).replace("_", "-") + "-mcp"


def check_tool_name(name: str) -> str:
    """Return `name` if it can be both an MCP/provider tool name and a Python method name, else raise."""
    if not TOOL_NAME.match(name) or keyword.iskeyword(name):
        raise UnrenderableSkeleton(f"tool name '{name}' is not usable: it must match {TOOL_NAME.pattern} "
                          "(a public Python method name of at most 64 characters)")
    return name


def check_identifier(name: str, what: str) -> str:
    """Return `name` if it is a public Python identifier, else raise UnrenderableSkeleton naming `what`."""
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise UnrenderableSkeleton(f"{what} '{name}' is not a public Python identifier")
    return name
