"""Reads of the installs room: installed packages, jobs, the community directory."""

from __future__ import annotations

from typing import Any

from django.db.models import (
    Case,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Lower
from django.utils.translation import get_language

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


def _not_installed(rows: QuerySet[DirectoryEntry]) -> QuerySet[DirectoryEntry]:
    from catalogue.models import Package

    return rows.filter(~Exists(Package.objects.filter(package_id=OuterRef("entry_id"))))


def _translated(entry: DirectoryEntry) -> dict[str, str]:
    """The entry's name/description/notes in the page's language (the registry's translations,
    keyed by BCP 47 tags such as zh-CN or zh-Hans), English otherwise."""
    language = (get_language() or "en").casefold()
    primary = language.split("-")[0]
    if primary == "en":
        return {}
    translations = (entry.data or {}).get("translations") or {}
    if not isinstance(translations, dict):
        return {}
    ranked = sorted(
        (key for key in translations if isinstance(key, str)),
        key=lambda key: (key.casefold() != language, key.split("-")[0].casefold() != primary),
    )
    for key in ranked:
        if key.split("-")[0].casefold() == primary and isinstance(translations[key], dict):
            return {k: v for k, v in translations[key].items() if isinstance(v, str)}
    return {}


def available_summary(entry: DirectoryEntry) -> dict[str, Any]:
    """A directory entry as a catalogue list item (the API's PackageItemOut with installed:
    false): what the entry declares, and nothing the package's files would have to say."""
    data = entry.data or {}
    words = _translated(entry)
    return {
        "id": entry.entry_id,
        "displayName": words.get("name") or entry.name,
        "description": words.get("description") or entry.description,
        "kind": "plugin",
        "version": "",
        "source": "directory",
        "trust": "community",
        "state": "available",
        "codeState": "",
        "codeError": "",
        "tags": [],
        "author": {"name": entry.author, "url": None},
        "provides": [],
        "requires": [],
        "updatedAt": None,
        "installed": False,
        "directory": {
            "category": entry.category,
            "maintainer": entry.maintainer,
            "status": entry.status,
            "repository": entry.repository,
            "path": entry.path,
            "ref": entry.ref,
            "installUrl": entry.install_url,
            "license": data.get("license") if isinstance(data.get("license"), str) else None,
            "covelVersion": data.get("covelVersion")
            if isinstance(data.get("covelVersion"), str)
            else None,
            "locales": [x for x in data.get("locales") or [] if isinstance(x, str)],
            "demo": data.get("demo") if isinstance(data.get("demo"), str) else None,
            "notes": words.get("notes")
            or (data.get("notes") if isinstance(data.get("notes"), str) else ""),
        },
    }


def available_entries(
    *, q: str = "", sort: str = "name", offset: int = 0, limit: int = 20
) -> tuple[int, list[dict[str, Any]]]:
    """Directory entries not installed that match the search, for the catalogue's list
    (catalogue.callouts.available_entries): a count and, when limit > 0, one slice."""
    rows = _not_installed(directory_entries(q=q))
    count = rows.count()
    if limit <= 0 or offset >= count:
        return count, []
    rows = rows.annotate(name_key=Lower("name"))
    order = ["name_key", "entry_id"]
    if sort == "relevance" and q.strip():
        # An exact id or name ranks first, as the installed packages' search does.
        wanted = q.strip().casefold()
        rows = rows.annotate(
            exact=Case(
                When(Q(entry_id=wanted) | Q(name_key=wanted), then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        order.insert(0, "exact")
    rows = rows.order_by(*order)
    return count, [available_summary(e) for e in rows[offset : offset + limit]]


def available_entry(*, package_id: str) -> dict[str, Any] | None:
    """The catalogue's detail page for an id no installed package has (one query)."""
    entry = _not_installed(DirectoryEntry.objects.filter(entry_id=package_id)).first()
    return available_summary(entry) if entry is not None else None
