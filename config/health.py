"""GET /healthz: can this process serve? Database, broker, Node host, migrations.

200 when every check passes, 503 otherwise, with one JSON line per check. Nothing in it names a
path, a host or a user: load balancers and anonymous visitors read it."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

# Starting Node costs ~50 ms: its verdict is kept this long between checks.
NODE_CHECK_SECONDS = 60.0
_node_cache: dict[str, Any] = {}
_node_lock = threading.Lock()


def check_database() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return None


def check_migrations() -> str | None:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        return f"{len(plan)} migration(s) not applied: run manage.py migrate"
    return None


def check_broker() -> str | None:
    url = getattr(settings, "REDIS_URL", "")
    if url:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
        return None
    folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    if not folder.is_dir():
        return "the file-system broker's folder is missing"
    probe = folder / f".healthz-{time.monotonic_ns()}"
    probe.write_bytes(b"")
    probe.unlink()
    return None


def check_node() -> str | None:
    with _node_lock:
        cached = _node_cache.get("verdict")
        if cached is not None and time.monotonic() - cached[0] < NODE_CHECK_SECONDS:
            return cached[1]
        from pluginhost.host import node_binary

        try:
            done = subprocess.run(
                [node_binary(), "--version"], capture_output=True, timeout=10, check=False
            )
            verdict = None if done.returncode == 0 else f"node exited with {done.returncode}"
        except (OSError, subprocess.TimeoutExpired) as exc:
            verdict = f"node could not start: {type(exc).__name__}"
        _node_cache["verdict"] = (time.monotonic(), verdict)
        return verdict


CHECKS: dict[str, Callable[[], str | None]] = {
    "database": check_database,
    "migrations": check_migrations,
    "broker": check_broker,
    "node": check_node,
}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    results: dict[str, Any] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            problem = check()
        except Exception as exc:  # a failed check is an answer, not an error page
            problem = f"{type(exc).__name__}"
        entry: dict[str, Any] = {"ok": problem is None}
        entry["ms"] = round((time.perf_counter() - started) * 1000, 1)
        if problem:
            entry["problem"] = problem
        results[name] = entry
    healthy = all(r["ok"] for r in results.values())
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": results},
        status=200 if healthy else 503,
    )
