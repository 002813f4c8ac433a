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
# PostgreSQL for the PostgreSQL store's tests (tests/pg.py starts a throwaway server from its
# binaries): Debian's package, installed only when missing; without it those tests skip.
if ! command -v initdb >/dev/null && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
fi
# tmux for the interactive `orbit replay` test (tests/e2e/test_cli_upgrade.py; it skips without).
if ! command -v tmux >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null || true
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
