#!/usr/bin/env bash
# Install Orbit into a virtual environment (./.venv unless VENV says) and run its main job: an
# Orbit server on an embedded SQLite file (.orbit/examples.db), the examples deployed, the
# examples' Python worker connected over WebSocket, and one order saga run to completion with
# its history printed. Everything it starts is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e '.[otel]'
"$VENV/bin/orbit" check examples/*.yaml
"$VENV/bin/python" examples/run.py "${1:-order_saga}"
