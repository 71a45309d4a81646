"""Reads of the Sessions app: sessions a person may see, installed manifests, plugin data, events."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, QuerySet, Sum

from approvals.selectors import packages_waiting, versions_in_force
from catalogue.manifest.loader import load_package
from catalogue.manifest.types import Manifest
from catalogue.models import Package
from core.memo import per_scope
from core.sql import Table, read, read_by_pk_related
from eventlog.models import SessionEvent
from sessions.models import (
    Interaction,
    PluginData,
    RecordedExport,
    Session,
    Turn,
)
from sessions.proposals import CHARACTERS, LORE_NAMESPACE, SESSION_DATA, merge_characters

LOCALE_NAME = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")
_MANIFESTS: dict[tuple[str, str, str], Manifest | None] = {}
_MANIFESTS_LOCK = threading.Lock()


def session_can_access(*, session: Session, user: AbstractBaseUser | AnonymousUser) -> bool:
    """The owner plays the session; staff may look and act too, for support."""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff) or session.owner_id == user.pk


def session_list(*, user: AbstractBaseUser) -> QuerySet[Session]:
    """A player's own sessions, newest first (staff see their own here too, not everyone's)."""
    return Session.objects.select_related("world").filter(owner=user).order_by("-created_at")


def session_get(*, session_id: uuid.UUID | str) -> Session | None:
    try:
        key = uuid.UUID(str(session_id))
    except ValueError:
        return None
    # Every API call on a session starts here: one plain statement, not a compiled queryset
    # (compiling the select_related query was a tenth of a turn's CPU in the web process).
    return read_by_pk_related(Session, key, related=("world", "owner"))


def _manifest(package_id: str, source_dir: str, content_hash: str) -> Manifest | None:
    """The loader's Manifest of an indexed package, cached by content hash (None when invalid)."""
    key = (package_id, source_dir, content_hash)
    with _MANIFESTS_LOCK:
        if key in _MANIFESTS:
            return _MANIFESTS[key]
    result = load_package(source_dir, host_version=settings.COVEL_HOST_VERSION)
    manifest = result.manifest if result.ok else None
    with _MANIFESTS_LOCK:
        _MANIFESTS[key] = manifest
    return manifest


def installed_manifests() -> dict[str, Manifest]:
    """Every indexed package that loads, by ID: what the resolver may choose from.

    A few plain columns, not whole rows: every turn and every job asks, and the manifests
    themselves come from the cache.
    """
    found: dict[str, Manifest] = {}
    loaded = loaded_packages()
    waiting = packages_waiting(
        package_ids=[p.package_id for p in loaded if p.trust != Package.Trust.BUNDLED]
    )
    # A community package whose current version waits for staff runs the approved version
    # it ran before, from the snapshot approvals kept of it: sessions switch on the first turn
    # after staff approve the new one (approvals/store.py).
    kept = versions_in_force(package_ids=waiting) if waiting else {}
    for package in loaded:
        source_dir, content_hash = package.source_dir, package.content_hash
        if package.package_id in kept:
            source_dir = kept[package.package_id]
            content_hash = Path(source_dir).parent.name  # the folder is named by the version
        manifest = _manifest(package.package_id, source_dir, content_hash)
        if manifest is not None and manifest.id == package.package_id:
            found[manifest.id] = manifest
    return found


# What the resolver and the approvals' usability verdicts read of a loaded package; the rest of
# the row (its manifest JSON) is loaded only if used (a community package waiting for review).
LOADED_FIELDS = ("package_id", "source_dir", "content_hash", "version", "state", "trust")


@per_scope
def loaded_packages() -> list[Package]:
    """The loaded packages (LOADED_FIELDS only): once per turn (core.memo), in one statement.
    Plain SQL (core/sql.py): every job asks, and compiling the query costs more than running it."""
    packages = Table(Package)
    return read(
        Package,
        f"{packages.col('state')} = %s",
        [Package.State.LOADED.value],
        fields=LOADED_FIELDS,
    )


def core_package_ids() -> list[str]:
    return sorted(Package.objects.loaded().filter(kind="core").values_list("package_id", flat=True))


def plugin_data_value(*, session: Session, plugin: str, namespace: str, key: str) -> Any:
    row = PluginData.objects.filter(
        session=session, plugin_id=plugin, namespace=namespace, key=key
    ).first()
    return None if row is None else row.value


def _plugin_data_row(row: PluginData) -> dict[str, Any]:
    return {
        "plugin": row.plugin_id,
        "namespace": row.namespace,
        "key": row.key,
        "value": row.value,
        "size": row.size,
        "updatedAt": row.updated_at.isoformat(),
    }


def plugin_data_page(
    *,
    session: Session,
    limit: int,
    offset: int = 0,
    plugin: str | None = None,
    namespace: str | None = None,
    key: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """One page of the session's committed values (by plugin, namespace, key) and the count of
    all that match: the plugin data panel and GET /api/sessions/{id}/plugin-data. Two queries."""
    rows = PluginData.objects.filter(session=session)
    if plugin is not None:
        rows = rows.filter(plugin_id=plugin)
    if namespace is not None:
        rows = rows.filter(namespace=namespace)
    if key is not None:
        rows = rows.filter(key=key)
    count = rows.count()
    page = rows.order_by("plugin_id", "namespace", "key")[offset : offset + limit]
    return [_plugin_data_row(row) for row in page], count


def plugin_data_usage(*, session_id: Any, plugin: str) -> tuple[int, int]:
    """(keys, bytes) one package keeps in a session now: what its quota is measured against."""
    totals = PluginData.objects.filter(session_id=session_id, plugin_id=plugin).aggregate(
        keys=Count("id"), size=Sum("size")
    )
    return totals["keys"] or 0, totals["size"] or 0


def plugin_data_usage_reader(*, session_id: Any) -> Callable[[str], tuple[int, int]]:
    """plugin_data_usage bound to a session: the TurnOverlay's `usage`."""
    return lambda plugin: plugin_data_usage(session_id=session_id, plugin=plugin)


def export_latest(*, session: Session, plugin: str, record_as: str) -> RecordedExport | None:
    return (
        RecordedExport.objects.filter(session=session, plugin_id=plugin, record_as=record_as)
        .order_by("-id")
        .first()
    )


def turn_list(*, session: Session, limit: int = 50, offset: int = 0) -> list[Turn]:
    """The `limit` latest turns after skipping the `offset` latest ones, oldest first."""
    newest = Turn.objects.filter(session=session).order_by("-created_at")
    turns = list(newest[offset : offset + limit])
    turns.reverse()
    return turns


def turn_count(*, session: Session) -> int:
    return Turn.objects.filter(session=session).count()


# ------------------------------------------------------------------ session lore


# (plugin, namespace, key), value: a session's plugin data as a turn read it once.
DataRows = list[tuple[tuple[str, str, str], Any]]


def session_lore(*, session: Session, data: DataRows | None = None) -> list[dict[str, Any]]:
    """The lore packages wrote in this session (lorebook.upsert), enabled entries only, by
    insertionOrder then id, as Covel lists its session lorebook.

    Each entry has the world lorebook's {id, title, keys, text} (title: its first key, else
    its id) and Covel's own fields (content, strategy, position, insertionOrder, pluginId).
    """
    if data is not None:
        rows: Any = [value for (_, namespace, _), value in data if namespace == LORE_NAMESPACE]
    else:
        rows = PluginData.objects.filter(session=session, namespace=LORE_NAMESPACE).values_list(
            "value", flat=True
        )
    entries = [dict(v) for v in rows if isinstance(v, dict) and v.get("enabled", True)]
    entries.sort(key=lambda e: (e.get("insertionOrder", 100), str(e.get("id"))))
    return [
        {
            "title": (e.get("keys") or [e.get("id")])[0],
            "text": e.get("content", ""),
            "source": "session",
            **e,
        }
        for e in entries
    ]


def session_characters(*, session: Session, data: DataRows | None = None) -> list[dict[str, Any]]:
    """The world's characters with the session's (character.upsert) over them, as ctx.world
    and the prompts' {{ world.characters }} see them from the turn after the upsert.
    data: the session's plugin data already read (a turn's), in table order."""
    if data is not None:
        rows: Any = [v for (p, n, _), v in data if p == SESSION_DATA and n == CHARACTERS]
    else:
        rows = PluginData.objects.filter(
            session=session, plugin_id=SESSION_DATA, namespace=CHARACTERS
        ).values_list("value", flat=True)
    own = [v for v in rows if isinstance(v, dict)]
    return merge_characters(list(session.world.characters or []), own)


# ------------------------------------------------------------------ forms and notifications


def interaction_exists(*, session: Session, interaction_id: str) -> bool:
    return Interaction.objects.filter(session=session, interaction_id=interaction_id).exists()


def interaction_get(*, session: Session, interaction_id: str) -> Interaction | None:
    return Interaction.objects.filter(session=session, interaction_id=interaction_id).first()


def interaction_pending_list(*, session: Session) -> list[Interaction]:
    """The forms still waiting for the player, oldest first."""
    return list(
        Interaction.objects.filter(session=session, status=Interaction.Status.PENDING).order_by(
            "created_at", "id"
        )
    )


def notification_recent_list(*, session: Session, limit: int = 10) -> list[dict[str, Any]]:
    """The latest notification.created payloads, newest first (the stream is their record)."""
    rows = SessionEvent.objects.filter(session=session, type="notification.created").order_by(
        "-seq"
    )[:limit]
    return [row.payload for row in rows]


# Problems the player should see among the notices (docs/play.md "Pages"): never silent.
PROBLEM_EVENTS = ("hook.aborted", "hook.failed", "extension.failed")


def problem_notice(type: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A hook's abort or failure, or a skipped extension provider, as a notice: the line
    names the package, the event (or point) and says what happened; the message is the body.
    The event is written with it (payload `notice`), so the live page shows this same line."""
    if type == "extension.failed":
        who = str(payload.get("plugin") or "")
        title = f"The {payload.get('point')} extension {who}/{payload.get('extension')} was skipped"
    else:
        who = str(payload.get("package") or "")
        done = "aborted" if type == "hook.aborted" else "failed"
        title = f"The {payload.get('event')} hook of {who} {done}"
    return {
        "title": title,
        "body": str(payload.get("message") or ""),
        "level": "error" if type == "hook.failed" else "warning",
        "pluginId": who,
        "problem": type,
    }


def notice_recent_list(*, session: Session, limit: int = 10) -> list[dict[str, Any]]:
    """The play page's notices, newest first: notifications, and the hook and extension
    problems of the session's stream as problem_notice lines."""
    rows = SessionEvent.objects.filter(
        session=session, type__in=("notification.created", *PROBLEM_EVENTS)
    ).order_by("-seq")[:limit]
    return [
        row.payload
        if row.type == "notification.created"
        else row.payload.get("notice") or problem_notice(row.type, row.payload)
        for row in rows
    ]


def package_messages(*, manifest: Manifest, locale: str) -> dict[str, str] | None:
    """The package's translations of its code's texts for a locale, or None without any.

    They live in locales/<locale>.messages.json, a JSON object from the source text to its
    translation, read by the loader (Manifest.messages; locales/<locale>.yaml translates
    manifest files only). fr-CA falls back to fr.
    """
    if not LOCALE_NAME.fullmatch(locale):
        return None  # the session's locale is the player's text: never a path
    for candidate in dict.fromkeys([locale, locale.split("-")[0]]):
        if candidate not in manifest.messages:
            continue
        texts = manifest.messages[candidate]
        # An unreadable file translates nothing; the source texts still show.
        return dict(texts) if texts is not None else None
    return None
