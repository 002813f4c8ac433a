#!/usr/bin/env bash
# Install Orbit into a virtual environment (./.venv unless VENV says) and run its main job as far
# as it exists today: check every example definition, then play one order saga through the
# decider with a fake worker and print its history.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e .
"$VENV/bin/orbit" check examples/*.yaml
"$VENV/bin/python" -m orbit_actors.testing.demo
