"""Reads of the sources app."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from sources.manifest import Codec, Resolved
from sources.models import SourceJob, SourceJobRun, SourcePlugin

RECENT_RUNS = 10
# Compiled codecs by (plugin, content hash): a changed plugin gets a fresh one.
_CODECS: dict[tuple[str, str], Codec] = {}
_CODECS_MAX = 256


def _codec(plugin: SourcePlugin) -> Codec:
    key = (plugin.plugin_id, plugin.content_hash)
    codec = _CODECS.get(key)
    if codec is None:
        if len(_CODECS) >= _CODECS_MAX:
            _CODECS.clear()
        codec = _CODECS[key] = Codec(plugin.source["codec"])
    return codec


def source_plugin_list(
    *, state: str | None = None, query: str | None = None
) -> QuerySet[SourcePlugin]:
    """Source plugins by id; state filters loaded/error, query matches id or service name.

    Each row carries how its jobs are doing (failing_jobs, last_error), in the same query: a
    plugin that loads but whose every ingest fails must not read as merely "Loaded".
    """
    latest_failed_run = SourceJobRun.objects.filter(
        job__plugin=OuterRef("pk"), job__failures__gt=0
    ).order_by("-created_at", "-id")
    plugins = SourcePlugin.objects.annotate(
        failing_jobs=Count(
            "jobs", filter=Q(jobs__failures__gt=0, jobs__active=True), distinct=True
        ),
        never_run_jobs=Count(
            "jobs", filter=Q(jobs__runs__isnull=True, jobs__active=True), distinct=True
        ),
        last_error=Subquery(latest_failed_run.values("error")[:1]),
    )
    if state:
        plugins = plugins.filter(state=state)
    if query:
        plugins = plugins.filter(Q(plugin_id__icontains=query) | Q(name__icontains=query))
    return plugins


def source_plugin_get(*, plugin_id: str) -> SourcePlugin | None:
    return SourcePlugin.objects.filter(plugin_id=plugin_id).first()


def source_job_list(*, plugin: SourcePlugin) -> list[SourceJob]:
    """The plugin's jobs, each with its RECENT_RUNS latest runs as .recent_runs."""
    jobs = list(plugin.jobs.all())
    for job in jobs:
        job.recent_runs = list(SourceJobRun.objects.filter(job=job).order_by("-id")[:RECENT_RUNS])
    return jobs


def source_job_runs(*, job: SourceJob) -> QuerySet[SourceJobRun]:
    return job.runs.order_by("-id")


class NotResolvable(ValueError):
    """The plugin cannot resolve anything (it is invalid) or the key/address does not resolve."""


def source_plugin_resolve(
    *, plugin: SourcePlugin, key: str | None = None, url: str | None = None
) -> Resolved:
    """A unit key or a web address, resolved through the plugin's codec.

    Raises NotResolvable (invalid plugin, both or neither given) or CodecError (why it fails).
    """
    if plugin.state != SourcePlugin.State.LOADED:
        raise NotResolvable(f"source plugin {plugin.plugin_id!r} is invalid; fix its errors first")
    if (key is None) == (url is None):
        raise NotResolvable("give exactly one of key or url")
    codec = _codec(plugin)
    return codec.resolve_key(key) if key is not None else codec.resolve_url(url or "")


__all__ = [
    "NotResolvable",
    "source_job_list",
    "source_job_runs",
    "source_plugin_get",
    "source_plugin_list",
    "source_plugin_resolve",
]
