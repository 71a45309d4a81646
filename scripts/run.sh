#!/usr/bin/env bash
# Installs Covel Hub and starts it on the embedded default (SQLite + a file-system broker):
# the web app on http://127.0.0.1:8000 and a Celery worker with its beat scheduler.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
PY=.venv/bin/python
$PY manage.py migrate --noinput
$PY manage.py validate_plugin plugins/*/
$PY manage.py sync_packages
$PY manage.py sync_worlds
$PY manage.py sync_sources

trap 'kill 0' EXIT INT TERM
.venv/bin/celery -A config worker --beat --loglevel=info --concurrency=2 &
# --insecure: runserver serves /static/ itself, as the embedded default has no web server in front.
$PY manage.py runserver "${HUB_ADDR:-127.0.0.1:8000}" --noreload --insecure &
wait
