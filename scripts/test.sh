#!/usr/bin/env bash
# Installs everything (test tools and Debian's chromium included) and runs every test.
# On the embedded default first; then again against PostgreSQL and Redis when they answer
# (always in CI, where they must).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh --dev
PY=.venv/bin/python

echo "== suite on the embedded default (SQLite, file-system broker)"
env -u DATABASE_URL -u REDIS_URL $PY -m pytest "$@"

PG_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
RD_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
if [ "${CI:-}" = "true" ] || $PY scripts/services_up.py "$PG_URL" "$RD_URL"; then
  echo "== suite on PostgreSQL and Redis"
  # Only the tests whose result can differ on these services run again: see
  # tests/conftest.py, pytest_collection_modifyitems, for which ones and why.
  COVEL_TEST_PASS=services DATABASE_URL=$PG_URL REDIS_URL=$RD_URL DB_CONN_MAX_AGE=0 \
    $PY -m pytest "$@"
else
  echo "== PostgreSQL/Redis not reachable here: second pass skipped (CI always runs it)"
fi
