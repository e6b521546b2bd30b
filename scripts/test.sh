#!/usr/bin/env bash
# Installs everything remem's tests need on a fresh machine, then runs the whole suite.
# Used as-is by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e '.[test]'

# system pieces for the browser and real-agent tests (skipped when present)
if [ -f scripts/install-system.sh ]; then
  bash scripts/install-system.sh
fi

exec .venv/bin/python -m pytest "$@"
