"""Writes of the sources app: syncing plugin folders into rows, and scheduling and running jobs.

Files on disk -> sources.manifest loader -> SourceLoadResult -> the rows written here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalogue.manifest.types import thaw
from sources.manifest import (
    MANIFEST,
    SourceLoadResult,
    binary_path,
    config_reads_issues,
    content_hash,
    load_source_plugin,
    parse_duration,
    rules_version,
    view_id_clashes_by_views,
    with_issues,
)
from sources.manifest.durations import SECOND, DurationError
from sources.models import SourceJob, SourceJobRun, SourcePlugin
from sources.runner import call_ingest

log = logging.getLogger(__name__)

# A run's timeout when its job names none ("empty is the host's default").
DEFAULT_TIMEOUT = "60s"
# Past its timeout a claimed job gets this long to report before the reaper gives it back.
LEASE_GRACE = timedelta(seconds=60)
DISPATCH_BATCH = 50
# Runs kept per job: enough history for the page and for diagnosis, bounded forever after.
RUNS_KEPT = 100


# --- Sync -------------------------------------------------------------------------------------
@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    invalid: dict[str, list[str]] = field(default_factory=dict)  # id -> error lines
    skipped: list[str] = field(default_factory=list)  # a folder whose id an earlier folder took


def source_plugin_dirs() -> list[Path]:
    return [Path(d) for d in getattr(settings, "COVEL_SOURCE_PLUGIN_DIRS", [])]


def _plugin_folders(dirs: Iterable[Path]) -> list[Path]:
    folders = []
    for base in dirs:
        if not base.is_dir():
            continue
        for child in sorted(base.iterdir()):
            if child.is_dir() and (child / MANIFEST).is_file():
                folders.append(child)
    return folders


def _json_safe(value: Any) -> Any:
    """TOML values JSON cannot hold (dates, times, inf/nan) become their TOML-ish text."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, date | time):
        return value.isoformat()
    return value


def _row_values(result: SourceLoadResult) -> dict[str, Any]:
    if result.manifest is not None:
        manifest = thaw(result.manifest.data)
        name = result.manifest.name
    else:
        # An invalid manifest may hold any TOML value; the row keeps what JSON can show.
        manifest = _json_safe(thaw(result.raw)) if result.raw is not None else {}
        source = manifest.get("source") if isinstance(manifest, dict) else None
        name = (
            source.get("name")
            if isinstance(source, dict) and isinstance(source.get("name"), str)
            else ""
        )
    return {
        "name": name or result.plugin_id,
        "folder": str(Path(result.path).resolve()),
        "state": SourcePlugin.State.LOADED if result.ok else SourcePlugin.State.ERROR,
        "content_hash": result.content_hash,
        "rules_version": rules_version(),
        "manifest": manifest,
        "errors": [i.as_dict() for i in result.errors],
        "warnings": [i.as_dict() for i in result.warnings],
    }


def _declared_views(manifest: Any) -> tuple[str, ...]:
    """The view ids in a stored manifest (normalised or raw), read defensively."""
    try:
        views = manifest["source"]["ui"]["views"]
        return tuple(v["id"] for v in views if isinstance(v, dict) and isinstance(v.get("id"), str))
    except (KeyError, TypeError):
        return ()


def _clash_issues(row: SourcePlugin) -> list[dict[str, str]]:
    return [e for e in row.errors if e.get("code") == "view-id-taken"]


def _config_verdict_changed(row: SourcePlugin, config_keys: frozenset[str]) -> bool:
    """Whether the configuration's keys now judge the row's config_reads otherwise."""
    stored = [e for e in row.errors if e.get("code") == "config-key"]
    manifest = row.manifest if isinstance(row.manifest, dict) else {}
    now = config_reads_issues(manifest, config_keys=config_keys)
    return stored != [i.as_dict() for i in now if i.code == "config-key"]


def source_plugins_sync(
    *, dirs: Iterable[Path] | None = None, now: datetime | None = None
) -> SyncReport:
    """Bring the rows in line with the folders: idempotent, unchanged rows are not written.

    A folder whose content hash is the one its row was made from is not parsed again; it is
    reloaded only when another plugin changed whether its view ids clash.
    """
    now = now or timezone.now()
    report = SyncReport()
    config_keys = source_config_keys()
    existing = {p.plugin_id: p for p in SourcePlugin.objects.all()}
    by_folder = {p.folder: p for p in existing.values()}
    results: dict[str, SourceLoadResult] = {}
    kept: dict[str, SourcePlugin] = {}  # unchanged rows, not parsed
    for folder in _plugin_folders(source_plugin_dirs() if dirs is None else dirs):
        row = by_folder.get(str(folder.resolve()))
        if (
            row is not None
            and row.content_hash == content_hash(folder)
            and row.rules_version == rules_version()
        ):
            plugin_id: str = row.plugin_id
            if plugin_id in results or plugin_id in kept:
                report.skipped.append(str(folder))
            elif _config_verdict_changed(row, config_keys):
                # The configuration changed under an unchanged folder: judge it again.
                results[plugin_id] = load_source_plugin(folder, config_keys=config_keys)
            else:
                kept[plugin_id] = row
            continue
        result = load_source_plugin(folder, config_keys=config_keys)
        if result.plugin_id in results or result.plugin_id in kept:
            report.skipped.append(str(folder))  # the first folder of an id wins
            continue
        results[result.plugin_id] = result

    # View ids are unique across all installed source plugins: a clash invalidates each side.
    # A plugin takes part when it is valid apart from such clashes.
    views = {pid: r.manifest.view_ids for pid, r in results.items() if r.manifest is not None}
    for pid, row in kept.items():
        if row.state == SourcePlugin.State.LOADED or (
            row.errors and len(_clash_issues(row)) == len(row.errors)
        ):
            views[pid] = _declared_views(row.manifest)
    clashes = view_id_clashes_by_views(views)
    for pid, row in list(kept.items()):
        if [i.as_dict() for i in clashes.get(pid, [])] != _clash_issues(row):
            # Its verdict changed with another plugin.
            results[pid] = load_source_plugin(row.folder, config_keys=config_keys)
            del kept[pid]
    for pid, issues in clashes.items():
        if pid in results:
            results[pid] = with_issues(results[pid], issues)

    with transaction.atomic():
        for pid, row in kept.items():
            report.unchanged.append(pid)
            if row.state == SourcePlugin.State.ERROR:
                report.invalid[pid] = [
                    f"{e['file']}:{e['path']} {e['message']} [{e['code']}]" for e in row.errors
                ]
        for pid, result in results.items():
            values = _row_values(result)
            row = existing.get(pid)
            if row is None:
                row = SourcePlugin.objects.create(plugin_id=pid, synced_at=now, **values)
                report.created.append(pid)
            elif all(getattr(row, k) == v for k, v in values.items()):
                report.unchanged.append(pid)
            else:
                for key, value in values.items():
                    setattr(row, key, value)
                row.synced_at = now
                row.save()
                report.updated.append(pid)
            if not result.ok:
                report.invalid[pid] = [str(i) for i in result.errors]
            _jobs_sync(plugin=row, result=result, now=now)
        gone = [pid for pid in existing if pid not in results and pid not in kept]
        if gone:
            SourcePlugin.objects.filter(plugin_id__in=gone).delete()
            report.removed.extend(sorted(gone))
    report.unchanged.sort()
    report.invalid = dict(sorted(report.invalid.items()))
    return report


def _jobs_sync(*, plugin: SourcePlugin, result: SourceLoadResult, now: datetime) -> None:
    if result.manifest is None:
        # An invalid plugin keeps its jobs' history but is never dispatched.
        plugin.jobs.filter(active=True).update(active=False)
        return
    specs = {spec.name: spec for spec in result.manifest.jobs}
    plugin.jobs.exclude(name__in=list(specs)).delete()
    jobs = {job.name: job for job in plugin.jobs.all()}
    source_jobs = {j["name"]: j for j in result.manifest.source.get("jobs", ())}
    for name, spec in specs.items():
        written = source_jobs[name]
        values = {
            "every": written["every"],
            "every_from": spec.every_from,
            "timeout": written.get("timeout", ""),
            "retry": written.get("retry", ""),
            "every_ns": spec.every_ns,
            "timeout_ns": spec.timeout_ns,
            "retry_ns": spec.retry_ns,
            "active": True,
        }
        job = jobs.get(name)
        if job is None:
            # A new job runs at once; its interval counts from the end of that first run.
            SourceJob.objects.create(plugin=plugin, name=name, next_run_at=now, **values)
            continue
        changed = [k for k, v in values.items() if getattr(job, k) != v]
        if not changed:
            continue
        for key in changed:
            setattr(job, key, values[key])
        # A shorter interval must not leave the job waiting out the old, longer one.
        latest = now + timedelta(microseconds=source_job_interval_ns(job=job) // 1000)
        if job.state == SourceJob.State.IDLE and job.next_run_at > latest:
            job.next_run_at = latest
        job.save()


# --- Configuration ----------------------------------------------------------------------------
def source_config() -> Mapping[str, Any]:
    """The configuration source plugins read (settings.COVEL_SOURCE_CONFIG, nested or dotted)."""
    value = getattr(settings, "COVEL_SOURCE_CONFIG", None)
    return value if isinstance(value, Mapping) else {}


def source_config_keys(*, config: Mapping[str, Any] | None = None) -> frozenset[str]:
    """The configuration's keys: every key and table of the configuration, dotted
    ({"sweep": {"fast": "10m"}} and {"sweep.fast": "10m"} both have sweep and sweep.fast).
    """
    config = source_config() if config is None else config
    keys: set[str] = set()

    def walk(prefix: str, table: Mapping[str, Any]) -> None:
        for name, value in table.items():
            parts = f"{prefix}{name}".split(".")
            keys.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
            if isinstance(value, Mapping):
                walk(f"{prefix}{name}.", value)

    walk("", config)
    return frozenset(keys)


def source_config_value(*, key: str, config: Mapping[str, Any] | None = None) -> Any:
    """A dotted key ("sweep.fast") read as a flat key first, then through nested tables.

    A table also takes the flat dotted keys under it: with {"sweep.fast": "90s"}, "sweep" is
    {"fast": "90s"}.
    """
    config = source_config() if config is None else config
    value: Any = None
    if key in config:
        value = config[key]
    else:
        node: Any = config
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                node = None
                break
            node = node[part]
        value = node
    prefix = key + "."
    flat = {
        name[len(prefix) :]: item
        for name, item in config.items()
        if isinstance(name, str) and name.startswith(prefix)
    }
    if flat and (value is None or isinstance(value, Mapping)):
        value = {**(value or {}), **flat}
    return value


def source_ingest_config(*, plugin_id: str, config_reads: Iterable[str]) -> dict[str, Any]:
    """What Ingest receives as config: the plugin's own table (the one named after its id,
    empty when the configuration has none) and the value of each config_reads key that is set.
    """
    own = source_config_value(key=plugin_id)
    config: dict[str, Any] = {plugin_id: dict(own) if isinstance(own, Mapping) else {}}
    for key in config_reads:
        value = source_config_value(key=key)
        if value is not None:
            config[key] = value
    return config


def source_job_interval_ns(*, job: SourceJob) -> int:
    """every, or the configuration duration every_from names when it is set and valid."""
    if job.every_from:
        value = source_config_value(key=job.every_from)
        if isinstance(value, str):
            try:
                ns = parse_duration(value)
            except DurationError:
                log.warning(
                    "%s: configuration %s=%r is not a Go duration; using every",
                    job,
                    job.every_from,
                    value,
                )
            else:
                if ns > 0:
                    return ns
                log.warning(
                    "%s: configuration %s=%r is not positive; using every",
                    job,
                    job.every_from,
                    value,
                )
    return job.every_ns


def source_job_timeout_ns(*, job: SourceJob) -> int:
    if job.timeout_ns:
        return job.timeout_ns
    return parse_duration(getattr(settings, "COVEL_SOURCE_JOB_TIMEOUT", DEFAULT_TIMEOUT))


def source_job_wait_ns(*, job: SourceJob, failures: int) -> int:
    """The wait before the next run: the interval after a success; after the n-th failure in a
    row, retry * 2^(n-1) capped at the interval (no retry: the interval itself)."""
    interval = source_job_interval_ns(job=job)
    if failures <= 0:
        return interval
    first = job.retry_ns or interval
    # Doubling stops once it passes the interval, so the exponent never grows without bound.
    wait = first
    for _ in range(failures - 1):
        if wait >= interval:
            break
        wait *= 2
    return min(wait, interval)


def _ns(value: int) -> timedelta:
    return timedelta(microseconds=value // 1000)


# --- Scheduling -------------------------------------------------------------------------------
def source_jobs_dispatch(
    *, now: datetime | None = None, send: Callable[[int], None] | None = None
) -> list[int]:
    """Claim every due job and start a run for it; returns the new run ids.

    send(run_id) hands each new run to a worker, inside the claim's transaction: the task
    module passes its own sender (sources.tasks.source_job_run_send, which waits for the
    commit), so these services never import the tasks that call them. Without it the runs are
    only created (tests run them by hand). Beat calls this every few seconds. The claim is a conditional UPDATE on the job's state and
    due time, so two dispatchers racing for one job start it once.
    """
    now = now or timezone.now()
    source_jobs_reap(now=now)
    due = list(
        SourceJob.objects.filter(
            active=True,
            state=SourceJob.State.IDLE,
            next_run_at__lte=now,
            plugin__state=SourcePlugin.State.LOADED,
        )
        .order_by("next_run_at")
        .values_list("id", "next_run_at")[:DISPATCH_BATCH]
    )
    started: list[int] = []
    for job_id, scheduled in due:
        job = SourceJob.objects.get(id=job_id)
        lease = now + _ns(source_job_timeout_ns(job=job)) + LEASE_GRACE
        with transaction.atomic():
            claimed = SourceJob.objects.filter(
                id=job_id, state=SourceJob.State.IDLE, active=True, next_run_at=scheduled
            ).update(state=SourceJob.State.RUNNING, lease_expires_at=lease)
            if claimed != 1:
                continue  # another dispatcher took it
            run = SourceJobRun.objects.create(job_id=job_id, scheduled_for=scheduled)
            if send is not None:
                send(run.id)
        started.append(run.id)
    return started


def source_jobs_reap(*, now: datetime | None = None) -> int:
    """Give back jobs whose lease ran out (their worker died): the run counts as a failure."""
    now = now or timezone.now()
    count = 0
    for job in SourceJob.objects.filter(state=SourceJob.State.RUNNING, lease_expires_at__lt=now):
        run = job.runs.filter(outcome=SourceJobRun.Outcome.RUNNING).order_by("-id").first()
        with transaction.atomic():
            if run is not None:
                if _finish(
                    run=run,
                    job=job,
                    outcome=SourceJobRun.Outcome.ORPHANED,
                    error="the run's worker vanished before it reported; its lease expired",
                    result=None,
                    ended_at=now,
                ):
                    count += 1
            elif SourceJob.objects.filter(id=job.id, state=SourceJob.State.RUNNING).update(
                state=SourceJob.State.IDLE, lease_expires_at=None, next_run_at=now
            ):
                count += 1
    return count


def source_job_data_dir(*, plugin_id: str) -> Path:
    """A plugin's own writable folder (the binary's working data), outside its install folder."""
    return Path(settings.VAR_DIR) / "sources" / plugin_id


def source_job_run_execute(*, run_id: int) -> SourceJobRun | None:
    """Run the plugin's binary for a claimed run and record how it went.

    Starting is itself a conditional UPDATE, so a message delivered twice runs the binary once.
    None when the run is gone (its plugin was removed by a sync meanwhile).
    """
    started_at = timezone.now()
    if not SourceJobRun.objects.filter(
        id=run_id, started_at__isnull=True, outcome=SourceJobRun.Outcome.RUNNING
    ).update(started_at=started_at):
        return SourceJobRun.objects.filter(id=run_id).first()
    run = SourceJobRun.objects.select_related("job__plugin").filter(id=run_id).first()
    if run is None:
        return None
    job = run.job
    plugin = job.plugin
    folder = Path(plugin.folder)
    outcome = call_ingest(
        binary=binary_path(folder, plugin.plugin_id),
        plugin_id=plugin.plugin_id,
        job=job.name,
        data_dir=source_job_data_dir(plugin_id=plugin.plugin_id),
        config=source_ingest_config(
            plugin_id=plugin.plugin_id, config_reads=plugin.source.get("config_reads", [])
        ),
        timeout_s=source_job_timeout_ns(job=job) / SECOND,
    )
    error = outcome.error
    if outcome.outcome != "succeeded" and outcome.stderr and outcome.stderr not in error:
        error = f"{error}\n--- stderr ---\n{outcome.stderr}"
    with transaction.atomic():
        _finish(
            run=run,
            job=job,
            outcome=outcome.outcome,
            error=error,
            result=outcome.result,
            ended_at=timezone.now(),
        )
    run.refresh_from_db()
    return run


def _finish(
    *, run: SourceJobRun, job: SourceJob, outcome: str, error: str, result: Any, ended_at: datetime
) -> bool:
    """Record a run's end and put its job back in the schedule; False if already recorded."""
    succeeded = outcome == SourceJobRun.Outcome.SUCCEEDED
    job.refresh_from_db()
    failures = 0 if succeeded else job.failures + 1
    wait = source_job_wait_ns(job=job, failures=failures)
    next_run_at = ended_at + _ns(wait)
    ended = SourceJobRun.objects.filter(id=run.id, outcome=SourceJobRun.Outcome.RUNNING).update(
        outcome=outcome,
        ended_at=ended_at,
        error=error,
        result=result,
        wait_ns=wait,
        next_run_at=next_run_at,
    )
    if not ended:
        return False
    SourceJob.objects.filter(id=job.id, state=SourceJob.State.RUNNING).update(
        state=SourceJob.State.IDLE,
        failures=failures,
        next_run_at=next_run_at,
        lease_expires_at=None,
    )
    old = list(
        SourceJobRun.objects.filter(job_id=job.id)
        .order_by("-id")
        .values_list("id", flat=True)[RUNS_KEPT:]
    )
    if old:
        SourceJobRun.objects.filter(id__in=old).delete()
    return True
