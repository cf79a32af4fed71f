#!/usr/bin/env bash
# Set up a virtual environment (first run only) and run the checks CI runs: lint, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
"$VENV/bin/pip" install -q -e '.[dev]'
"$VENV/bin/ruff" check envscaler_mcp tests benchmarks
"$VENV/bin/mypy"
exec "$VENV/bin/python" -m pytest "$@"
