"""Pages of the source plugin catalogue: thin views over selectors and services."""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from sources import selectors, services
from sources.manifest.durations import format_duration
from sources.models import SourceJob, SourcePlugin


@require_GET
def source_plugin_list(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state") or ""
    if state not in SourcePlugin.State.values:
        state = ""
    query = (request.GET.get("q") or "").strip()
    plugins = selectors.source_plugin_list(state=state or None, query=query or None)
    return render(
        request,
        "sources/list.html",
        {"plugins": plugins, "state": state, "q": query, "states": SourcePlugin.State.choices},
    )


@require_GET
def source_plugin_detail(request: HttpRequest, plugin_id: str) -> HttpResponse:
    plugin = selectors.source_plugin_get(plugin_id=plugin_id)
    if plugin is None:
        raise Http404(f"no source plugin {plugin_id!r}")
    jobs = selectors.source_job_list(plugin=plugin)
    for job in jobs:
        job.interval_text = format_duration(services.source_job_interval_ns(job=job))
    source = plugin.source
    return render(
        request,
        "sources/detail.html",
        {
            "plugin": plugin,
            "source": source,
            "codec": source.get("codec") or {},
            "ui": source.get("ui") or {},
            "jobs": jobs,
            "raw_json": json.dumps(plugin.manifest, indent=2, ensure_ascii=False, default=str),
        },
    )


@staff_member_required
@require_POST
def source_plugins_sync(request: HttpRequest) -> HttpResponse:
    report = services.source_plugins_sync()
    messages.info(
        request,
        f"Synced: {len(report.created)} new, {len(report.updated)} updated, "
        f"{len(report.unchanged)} unchanged, {len(report.removed)} removed, {len(report.invalid)} invalid.",
    )
    return redirect("sources:list")


@staff_member_required
@require_POST
def source_job_run_now(request: HttpRequest, plugin_id: str, job_name: str) -> HttpResponse:
    """Bring a job's next run forward to now; beat's dispatcher starts it within seconds."""
    updated = SourceJob.objects.filter(
        plugin__plugin_id=plugin_id, name=job_name, active=True, state=SourceJob.State.IDLE
    ).update(next_run_at=timezone.now())
    if updated:
        messages.info(request, f"Job {job_name} will run within a few seconds.")
    else:
        messages.error(request, f"Job {job_name} is running, inactive or unknown.")
    return redirect("sources:detail", plugin_id=plugin_id)
