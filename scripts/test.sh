#!/usr/bin/env bash
# Set up a virtual environment (first run only) and run the checks CI runs: lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# ray and openenv-core: optional extras whose tests run in CI (each installs in well under a minute)
"$VENV/bin/pip" install -q -e '.[dev,local,ray,openenv]'
# An independent MCP client for the conformance tests (skipped with a reason when npm is missing).
if ! command -v mcp-inspector >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  npm install -g --silent @modelcontextprotocol/inspector@2.12.0 >/dev/null 2>&1 \
    || echo "note: could not install the MCP Inspector; its tests will be skipped" >&2
fi
# Chromium for the viewer's browser tests (Debian's package; Playwright drives it, downloads no browser).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
    || echo "note: could not install chromium; the viewer's browser tests will be skipped" >&2
fi
"$VENV/bin/ruff" check envscaler_mcp tests benchmarks examples environments templates/server/runtime
"$VENV/bin/mypy"
# The map of docs/architecture.md: stages import one way, no cycle between packages ([tool.importlinter]).
"$VENV/bin/lint-imports" --no-cache --no-logo
# Two pytest-xdist workers on a machine of two or more CPUs (TEST_WORKERS=N for N, TEST_WORKERS=1 for one process):
# each file, or each folder whose tests share a session fixture, runs whole in one worker (tests/conftest.py marks
# the groups), in the collection order.
if [ -z "${TEST_WORKERS:-}" ]; then
  TEST_WORKERS=$([ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && echo 2 || echo 1)
fi
if [ "$TEST_WORKERS" -gt 1 ]; then
  exec "$VENV/bin/python" -m pytest -n "$TEST_WORKERS" --dist loadgroup --no-loadscope-reorder "$@"
fi
exec "$VENV/bin/python" -m pytest "$@"
