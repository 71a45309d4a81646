"""The sources API: the source plugin index and its codec (mounted at /api/)."""

from __future__ import annotations

from typing import Literal

from django.http import HttpRequest
from ninja import Query, Router

from core.errors import ApiError, NotFound
from core.schemas import errors
from sources import selectors
from sources.manifest import CodecError
from sources.models import SourcePlugin
from sources.schemas import (
    ResolveIn,
    ResolveOut,
    SourceJobOut,
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


def _plugin(plugin_id: str) -> SourcePlugin:
    plugin = selectors.source_plugin_get(plugin_id=plugin_id)
    if plugin is None:
        raise NotFound(f"no source plugin {plugin_id!r}")
    return plugin


@router.get("/sources", response={200: list[SourcePluginSummaryOut], **errors(422)})
def source_plugins(
    request: HttpRequest, state: Literal["loaded", "error"] | None = None
) -> list[dict]:
    """Every indexed source plugin; ?state=loaded or ?state=error filters."""
    return [_summary(p) for p in selectors.source_plugin_list(state=state)]


@router.get("/sources/{plugin_id}", response={200: SourcePluginOut, **errors(404, 422)})
def source_plugin(request: HttpRequest, plugin_id: str) -> dict:
    plugin = _plugin(plugin_id)
    jobs = [
        SourceJobOut.model_validate(job, from_attributes=True).model_dump()
        for job in plugin.jobs.all()
    ]
    return {
        "id": plugin.plugin_id,
        "name": plugin.name,
        "state": plugin.state,
        # Where the plugin sits on the server is staff knowledge, as on the HTML page.
        "folder": plugin.folder if getattr(request.user, "is_staff", False) else None,
        "content_hash": plugin.content_hash,
        "synced_at": plugin.synced_at,
        "manifest": plugin.manifest,
        "errors": plugin.errors,
        "warnings": plugin.warnings,
        "jobs": jobs,
    }


@router.get(
    "/sources/{plugin_id}/resolve",
    response={200: ResolveOut, **errors(404, 422)},
)
def source_plugin_resolve(request: HttpRequest, plugin_id: str, query: Query[ResolveIn]) -> dict:
    """?key=<unit key> or ?url=<web address> -> the unit's key, address, label and fields."""
    plugin = _plugin(plugin_id)
    try:
        resolved = selectors.source_plugin_resolve(plugin=plugin, key=query.key, url=query.url)
    except (CodecError, selectors.NotResolvable) as exc:
        raise ApiError(str(exc), code="not_resolvable", status=422) from None
    return resolved.as_dict()
