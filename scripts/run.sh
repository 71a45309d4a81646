#!/usr/bin/env bash
# Installs Covel Hub and starts it on the embedded default (SQLite + a file-system broker):
# the web app on http://127.0.0.1:8000 (uvicorn, ASGI), a Celery worker and the beat scheduler.
# Ctrl-C or SIGTERM stops all three within 10 s (docs/deploy.md runs them as separate services).
# COVEL_SKIP_INSTALL=1 skips the install and set-up steps (the shutdown test uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
VAR=${COVEL_VAR_DIR:-var}
mkdir -p "$VAR"

# DEBUG is off, so the hub needs a secret key: the embedded default makes one, once.
if [ -z "${SECRET_KEY:-}" ] && [ -z "${SECRET_KEY_FILE:-}" ] && [ ! -s "$VAR/secret_key" ]; then
  # Plain python3: on a fresh machine the venv does not exist yet.
  (umask 077 && "${PYTHON:-python3}" -c "import secrets; print(secrets.token_urlsafe(50))" >"$VAR/secret_key")
fi

if [ "${COVEL_SKIP_INSTALL:-}" != "1" ]; then
  scripts/install.sh
  $PY manage.py migrate --noinput
  $PY manage.py collectstatic --noinput --verbosity 0
  $PY manage.py validate_plugin plugins/*/
  $PY manage.py sync_packages
  $PY manage.py sync_worlds
  $PY manage.py sync_sources
fi

ADDR=${HUB_ADDR:-127.0.0.1:8000}
BEAT_PID="$VAR/celerybeat.pid"
pids=()

stop() {
  trap - INT TERM EXIT
  [ ${#pids[@]} -eq 0 ] && return
  # TERM to each service itself: Celery stops its own pool (a TERM to its whole group would end
  # the pool's processes under it, and Celery logs each as an error). Each service runs in its
  # own process group (set -m), so whatever is left of a group is killed below.
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Celery finishes the running task on TERM; past 8 s it is stopped cold (a job's lease
  # expires and the reaper gives it to another worker, docs/jobs.md).
  for _ in $(seq 80); do
    alive=0
    # A process that ended stays a zombie until it is reaped: only the living count.
    for pid in "${pids[@]}"; do ps -o stat= -g "$pid" 2>/dev/null | grep -qv '^Z' && alive=1; done
    [ $alive -eq 0 ] && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$BEAT_PID"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

# The periodic tasks (source job dispatch, the orphan reaper) run every few seconds: at info
# level their "received"/"succeeded" lines were half the log. Warnings and errors still show;
# COVEL_LOG_LEVEL=info brings the chatter (and Celery's banners) back.
LOG_LEVEL=${COVEL_LOG_LEVEL:-warning}
QUIET=--quiet
[ "$LOG_LEVEL" = "warning" ] || QUIET=

set -m
# --pidfile is beat's lock: a second beat refuses to start while the first one lives.
.venv/bin/celery -A config $QUIET beat --loglevel="$LOG_LEVEL" \
  --schedule "$VAR/celerybeat-schedule" --pidfile "$BEAT_PID" &
pids+=($!)
.venv/bin/celery -A config $QUIET worker --loglevel="$LOG_LEVEL" --concurrency=2 &
pids+=($!)
# uvicorn: ASGI, so an open event stream waits on a notification instead of holding a thread.
DB_POOL=${DB_POOL:-true} .venv/bin/uvicorn config.asgi:application --host "${ADDR%:*}" \
  --port "${ADDR##*:}" --lifespan off --timeout-graceful-shutdown 5 --no-access-log &
pids+=($!)
set +m

echo "Covel Hub runs at http://$ADDR/ (Ctrl-C stops it)."
# A fresh install has nobody who may approve packages or configure model slots yet.
if ! $PY manage.py shell -v 0 -c "from django.contrib.auth import get_user_model as users; import sys
sys.exit(0 if users().objects.filter(is_superuser=True).exists() else 1)" 2>/dev/null; then
  echo "next: create an admin with  .venv/bin/python manage.py createsuperuser  (then sign in at http://$ADDR/admin/)"
fi
# Any service ending ends the hub (the trap stops the others).
wait -n
