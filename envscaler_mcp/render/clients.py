"""Client configuration snippets and the MCP registry `server.json` of a generated server."""

from __future__ import annotations

from typing import Any

REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DEFAULT_REGISTRY_NAMESPACE = "io.github.envscaler-mcp"


def registry_name(dist_name: str, namespace: str = DEFAULT_REGISTRY_NAMESPACE) -> str:
    """`<namespace>/<dist name>`, the server's name in an MCP registry."""
    return f"{namespace}/{dist_name}"


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def server_json(*, dist_name: str, title: str, description: str, version: str,
                namespace: str = DEFAULT_REGISTRY_NAMESPACE) -> dict[str, Any]:
    """A registry entry (schema 2025-12-11): pypi package run with uvx over stdio."""
    return {
        "$schema": REGISTRY_SCHEMA,
        "name": registry_name(dist_name, namespace),
        "title": _clip(title),
        "description": _clip(description),
        "version": version,
        "packages": [{
            "registryType": "pypi",
            "identifier": dist_name,
            "version": version,
            "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
        }],
    }


def stdio_entry(command: str, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """One `mcpServers` entry (Claude Desktop / Cursor shape)."""
    entry: dict[str, Any] = {"command": command, "args": list(args)}
    if env:
        entry["env"] = dict(env)
    return entry


def client_config(client: str, server_key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A whole config file for `client` holding one server: `mcpServers` or VS Code's `servers` + `type`."""
    if client == "vscode":
        return {"servers": {server_key: {"type": "stdio", **entry}}}
    return {"mcpServers": {server_key: entry}}


CLIENTS = {"claude-desktop": "claude_desktop.json", "cursor": "cursor.json", "vscode": "vscode.json"}
