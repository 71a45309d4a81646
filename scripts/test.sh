#!/usr/bin/env bash
# Installs everything (test tools and Debian's chromium included) and runs every test.
# On the embedded default; and on PostgreSQL and Redis when they answer (always in CI, where
# they must). The two passes run at the same time: most of a test's time is spent waiting on
# the processes it starts (Node, uvicorn, Celery, Chromium), so two passes share two cores well.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh --dev
PY=.venv/bin/python
ROOT=$PWD
LOGS=var/test-logs
mkdir -p "$LOGS"

PG_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
RD_URL=${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}
services=no
if [ "${CI:-}" = "true" ] || $PY scripts/services_up.py "$PG_URL" "$RD_URL"; then
  services=yes
fi

embedded_pass() {
  env -u DATABASE_URL -u REDIS_URL COVEL_VAR_DIR="$ROOT/var/test-embedded" "$@"
}
# Only the tests whose result can differ on these services run again: see tests/conftest.py,
# pytest_collection_modifyitems, for which ones and why.
services_pass() {
  COVEL_TEST_PASS=services COVEL_VAR_DIR="$ROOT/var/test-services" DATABASE_URL=$PG_URL \
    REDIS_URL=$RD_URL DB_CONN_MAX_AGE=0 "$@"
}

# Side by side, each pass needs a Redis of its own: channels are shared by every database of a
# server, so one pass would hear the other's session events. The embedded pass's Redis tests
# (Redis as the broker beside SQLite) get a private server; the second pass keeps the machine's.
private_redis=""
cleanup() { [ -n "$private_redis" ] && kill "$private_redis" 2>/dev/null; true; }
trap cleanup EXIT
if [ $services = yes ] && command -v redis-server >/dev/null; then
  port=$($PY -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  mkdir -p var/test-redis
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir var/test-redis \
    >"$LOGS/redis.log" 2>&1 &
  private_redis=$!
  for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
fi

status=0
if [ -n "$private_redis" ]; then
  echo "== suite on PostgreSQL and Redis, beside the next pass (output: $LOGS/services.log)"
  services_pass $PY -m pytest "$@" >"$LOGS/services.log" 2>&1 &
  second=$!
  echo "== suite on the embedded default (SQLite, file-system broker)"
  TEST_REDIS_URL="redis://127.0.0.1:$port/0" embedded_pass $PY -m pytest "$@" || status=$?
  second_status=0
  wait $second || second_status=$?
  # 5: nothing selected, when the arguments name only tests that run once (see above).
  [ $second_status = 5 ] && second_status=0
  echo "== suite on PostgreSQL and Redis: its output"
  cat "$LOGS/services.log"
  [ $second_status = 0 ] || status=$second_status
else
  echo "== suite on the embedded default (SQLite, file-system broker)"
  embedded_pass $PY -m pytest "$@" || status=$?
  if [ $services = yes ]; then
    echo "== suite on PostgreSQL and Redis"
    services_pass $PY -m pytest "$@" || { code=$?; [ $code = 5 ] || status=$code; }
  else
    echo "== PostgreSQL/Redis not reachable here: second pass skipped (CI always runs it)"
  fi
fi
exit $status
