"""Reads of the installs room: installed packages, jobs, the community directory."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from installs.models import DirectoryEntry, Installation, InstallJob


def installation_list() -> QuerySet[Installation]:
    return Installation.objects.all()


def installation_get(*, package_id: str) -> Installation | None:
    return Installation.objects.filter(package_id=package_id).first()


def installation_out(row: Installation) -> dict[str, Any]:
    """Covel's PluginInstallation shape: {id, version, source, pendingUpdate}."""
    return {
        "id": row.package_id,
        "version": row.version,
        "source": row.source if row.kind == Installation.Kind.GIT else None,
        "pendingUpdate": row.pending_update,
    }


def package_provenance(*, package_id: str) -> dict[str, Any] | None:
    """What the package page shows: installed from where, by whom, when; an update found.
    The catalogue reaches this through catalogue.callouts.package_provenance (it sits below)."""
    row = Installation.objects.filter(package_id=package_id).select_related("installed_by").first()
    if row is None:
        return None
    source = row.source or {}
    return {
        "kind": row.get_kind_display(),
        "repository": source.get("repository") or "",
        "commit": source.get("commit") or "",
        "path": source.get("path") or "",
        "filename": source.get("filename") or "",
        "digest": row.digest,
        "tracking": source.get("tracking") or {},
        "by": row.installed_by_name,
        "at": row.installed_at,
        "version": row.version,
        "pending_update": row.pending_update,
        "checked_at": row.checked_at,
    }


def job_list(*, limit: int = 20) -> QuerySet[InstallJob]:
    return InstallJob.objects.all()[:limit]


def job_get(*, job_id: int) -> InstallJob | None:
    return InstallJob.objects.filter(pk=job_id).first()


def directory_entries(
    *, q: str = "", category: str = "", status: str = ""
) -> QuerySet[DirectoryEntry]:
    rows = DirectoryEntry.objects.select_related("source")
    if q:
        words = q.casefold().split()
        for word in words:
            rows = rows.filter(search_text__contains=word)
    if category:
        rows = rows.filter(category=category)
    if status:
        rows = rows.filter(status=status)
    return rows.order_by("entry_id")


def directory_entry_get(*, entry_id: str) -> DirectoryEntry | None:
    return DirectoryEntry.objects.select_related("source").filter(entry_id=entry_id).first()


def catalogue_available(*, q: str = "", limit: int = 12) -> list[dict[str, Any]]:
    """Directory entries not installed yet, for the catalogue's "Available" shelf
    (catalogue.callouts.catalogue_available): two queries whatever the size of the directory."""
    from catalogue.models import Package

    installed = set(Package.objects.values_list("package_id", flat=True))
    out = []
    for entry in directory_entries(q=q)[: limit + len(installed)]:
        if entry.entry_id in installed:
            continue
        out.append(
            {
                "id": entry.entry_id,
                "name": entry.name,
                "description": entry.description,
                "author": entry.author,
                "category": entry.category,
                "status": entry.status,
                "maintainer": entry.maintainer,
            }
        )
        if len(out) >= limit:
            break
    return out
