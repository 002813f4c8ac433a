#!/usr/bin/env bash
# Install Orbit with its test tools and the otel extra into a virtual environment (./.venv unless
# VENV says), then run ruff, mypy --strict and the whole test suite. This is the README's test
# command; CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e '.[test,otel]'
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
"$VENV/bin/mypy"
"$VENV/bin/python" -m pytest "$@"
# The core end-to-end API and worker tests again, on the alternative server (--server hypercorn).
if [ $# -eq 0 ]; then
  ORBIT_E2E_SERVER=hypercorn "$VENV/bin/python" -m pytest tests/e2e/test_protocol.py \
    tests/e2e/test_api_errors.py tests/e2e/test_results.py tests/e2e/test_auth.py tests/e2e/test_edge.py \
    tests/e2e/test_fuzz_openapi.py
fi
