#!/usr/bin/env bash
# Regenerates the Python lock files from pyproject.toml with pip-tools (hashes for every
# distribution of every pinned release). Run after changing a dependency in pyproject.toml.
# Usage: scripts/lock.sh                      (re-resolve within pyproject's ranges, keep pins)
#        scripts/lock.sh --upgrade-package X  (move X, and only X, to its newest allowed release)
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=var/lock-tools
[ -x "$TOOLS/bin/pip-compile" ] || { python3 -m venv "$TOOLS" && "$TOOLS/bin/pip" install --quiet pip-tools; }
common=(--quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links "$@")
"$TOOLS/bin/pip-compile" "${common[@]}" -o requirements/run.lock pyproject.toml
"$TOOLS/bin/pip-compile" "${common[@]}" --extra dev -o requirements/dev.lock pyproject.toml
