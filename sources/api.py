"""The sources API: the source plugin index and its codec (mounted at /api/)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Status

from sources import selectors
from sources.manifest import CodecError
from sources.models import SourcePlugin
from sources.schemas import (
    ErrorOut,
    JobOut,
    ResolveIn,
    ResolveOut,
    SourcePluginOut,
    SourcePluginSummaryOut,
)

router = Router(tags=["sources"])


def _summary(plugin: SourcePlugin) -> dict:
    return {
        "id": plugin.plugin_id,
        "name": plugin.name,
        "state": plugin.state,
        "errors": len(plugin.errors),
        "warnings": len(plugin.warnings),
        "url": f"/api/sources/{plugin.plugin_id}",
    }


@router.get("/sources", response=list[SourcePluginSummaryOut])
def source_plugins(request: HttpRequest, state: str | None = None) -> list[dict]:
    """Every indexed source plugin; ?state=loaded or ?state=error filters."""
    return [_summary(p) for p in selectors.source_plugin_list(state=state)]


@router.get("/sources/{plugin_id}", response={200: SourcePluginOut, 404: ErrorOut})
def source_plugin(request: HttpRequest, plugin_id: str) -> Status:
    plugin = selectors.source_plugin_get(plugin_id=plugin_id)
    if plugin is None:
        return Status(404, {"detail": f"no source plugin {plugin_id!r}"})
    jobs = [
        JobOut.model_validate(job, from_attributes=True).model_dump() for job in plugin.jobs.all()
    ]
    return Status(
        200,
        {
            "id": plugin.plugin_id,
            "name": plugin.name,
            "state": plugin.state,
            "folder": plugin.folder,
            "content_hash": plugin.content_hash,
            "synced_at": plugin.synced_at,
            "manifest": plugin.manifest,
            "errors": plugin.errors,
            "warnings": plugin.warnings,
            "jobs": jobs,
        },
    )


@router.get(
    "/sources/{plugin_id}/resolve",
    response={200: ResolveOut, 404: ErrorOut, 422: ErrorOut},
)
def source_plugin_resolve(request: HttpRequest, plugin_id: str, query: Query[ResolveIn]) -> Status:
    """?key=<unit key> or ?url=<web address> -> the unit's key, address, label and fields."""
    plugin = selectors.source_plugin_get(plugin_id=plugin_id)
    if plugin is None:
        return Status(404, {"detail": f"no source plugin {plugin_id!r}"})
    try:
        resolved = selectors.source_plugin_resolve(plugin=plugin, key=query.key, url=query.url)
    except (CodecError, selectors.NotResolvable) as exc:
        return Status(422, {"detail": str(exc)})
    return Status(200, resolved.as_dict())
