#!/usr/bin/env bash
# Install Orbit with its test tools and the otel extra into a virtual environment (./.venv unless
# VENV says), then run ruff, mypy --strict and the whole test suite. This is the README's test
# command; CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -e '.[test,otel,postgres]'
# System tools the tests drive, Debian's packages, each installed only when missing and only as
# root (apt): PostgreSQL for the PostgreSQL store's tests (tests/pg.py starts throwaway servers
# from its binaries), chromium for the web console's browser tests (never a downloaded browser),
# npm for axe-core (below), tmux for the CLI's terminal tests. Without one, its tests skip and
# say why.
missing=()
if ! command -v initdb >/dev/null && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  missing+=(postgresql)
fi
command -v chromium >/dev/null || missing+=(chromium)
command -v npm >/dev/null || missing+=(npm)
command -v tmux >/dev/null || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "not root: ${missing[*]} not installed; the tests that need them will skip" >&2
  fi
fi
# The console's accessibility tests inject axe-core from the npm registry into .cache/npm
# (ignored by git).
if [ ! -f .cache/npm/node_modules/axe-core/axe.min.js ] && command -v npm >/dev/null; then
  npm install --silent --no-audit --no-fund --prefix .cache/npm axe-core@4
fi
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
