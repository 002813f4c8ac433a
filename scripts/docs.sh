#!/usr/bin/env bash
# Build the documentation site into build/site: docs/ plus the references generated from Orbit
# itself (scripts/docsgen.py), with mkdocs-material (the `docs` extra), warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import material' 2>/dev/null || "$VENV/bin/python" -m pip install --quiet -e '.[docs]'
"$VENV/bin/python" scripts/docsgen.py build/docs-src
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet -f mkdocs.yml "$@"
echo "built build/site (open build/site/index.html)"
