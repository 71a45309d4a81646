"""The database-backed HostCallbacks: what plugin code may ask of a session while it runs.

One instance serves one runtime (or one RPC action, or one tool call) of one package: the
package and runtime come from Python's own record, never from the plugin. Inside a turn, reads
and staged writes go through the turn's TurnOverlay; an RPC action (no turn) reads committed
rows and its ctx.store.setPluginData writes at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from django.db import transaction

from pluginhost.callbacks import PackageCapabilities
from pluginhost.errors import CallbackRefused
from sessions import store_reads
from sessions.errors import SessionBusy, WriteRefused
from sessions.locks import session_locked
from sessions.models import PluginData, Session, Turn
from sessions.operations import (
    MISSING,
    TurnOverlay,
    check_quota,
    check_value,
    datasets_of,
    value_size,
)
from sessions.proposals import reserved_namespace
from sessions.selectors import plugin_data_usage

MAX_MESSAGES_PAGE = 500


class RecursiveCalls:
    """ctx.recursiveCall for callbacks that serve a turn (the database's and the offline cases'
    memory ones alike): the turn's executor runs runtime_id of this package nested."""

    on_recurse: Callable[..., dict[str, Any]] | None = None

    def recursive_call(
        self,
        *,
        package: str,
        runtime: str | None,
        runtime_id: str,
        player_message: str | None,
        payload: Any,
        operations: list[dict[str, Any]],
        proposals: list[dict[str, Any]],
    ) -> dict[str, Any]:
        if self.on_recurse is None:
            raise CallbackRefused(
                "recursiveCall runs only inside a function runtime of a turn",
                code="recursive_call_unavailable",
            )
        return self.on_recurse(
            runtime_id=runtime_id,
            player_message=player_message,
            payload=payload,
            operations=operations,
            proposals=proposals,
        )


class SessionCallbacks(RecursiveCalls, PackageCapabilities):
    def __init__(
        self,
        *,
        session: Session,
        package: str,
        runtime: str | None,
        overlay: TurnOverlay | None = None,
        on_emit: Callable[[str, dict[str, Any]], None] | None = None,
        on_write: Callable[[str, str, Any], None] | None = None,
        manifest: Any = None,
        on_recurse: Callable[..., dict[str, Any]] | None = None,
        lock_writes: bool = False,
    ) -> None:
        self.session = session
        self.package = package
        self.runtime = runtime  # qualified runtime ID inside a turn
        self.overlay = overlay
        self.on_emit = on_emit
        self.on_write = on_write
        self.manifest = manifest
        # The turn executor's ctx.recursiveCall for this run; None outside a function run.
        self.on_recurse = on_recurse
        # An RPC action runs without the session's lease; each immediate write takes it.
        self.lock_writes = lock_writes

    # The reader identity the overlay tracks: the runtime, or the package for a tool call.
    @property
    def reader(self) -> str:
        return self.runtime or self.package

    # ------------------------------------------------------------------ plugin data

    def plugin_data_get(
        self, *, package: str, runtime: str | None, namespace: str, key: str
    ) -> Any:
        if self.overlay is not None:
            return self.overlay.get(
                runtime=self.reader, plugin=self.package, namespace=namespace, key=key
            )
        row = PluginData.objects.filter(
            session=self.session, plugin_id=self.package, namespace=namespace, key=key
        ).first()
        return None if row is None else row.value

    def plugin_data_list(
        self, *, package: str, runtime: str | None, namespace: str
    ) -> list[dict[str, Any]]:
        if self.overlay is not None:
            return self.overlay.list(runtime=self.reader, plugin=self.package, namespace=namespace)
        return [
            {"key": row.key, "value": row.value}
            for row in PluginData.objects.filter(
                session=self.session, plugin_id=self.package, namespace=namespace
            ).order_by("key")
        ]

    def plugin_data_set(
        self, *, package: str, runtime: str | None, namespace: str, key: str, value: Any
    ) -> None:
        """An RPC action's immediate write (the host serves this for actions only)."""
        if self.overlay is not None:
            raise CallbackRefused(
                "a runtime's writes commit with its turn; use ctx.pluginData", code="not_allowed"
            )
        if reserved_namespace(namespace):
            # Covel's RPC store view refuses the framework's namespaces as its commit does.
            raise CallbackRefused(
                f"{self.package}: namespace {namespace!r} is reserved for the framework and "
                "cannot be written by plugins",
                code="namespace-reserved",
            )
        dataset = datasets_of(self.manifest).get(namespace) if self.manifest is not None else None
        try:
            check_value(
                plugin=self.package,
                namespace=namespace,
                key=key,
                value=MISSING if value is None else value,
                dataset=dataset,
            )
        except WriteRefused as exc:
            raise CallbackRefused(str(exc), code=exc.code) from None
        try:
            lease = (
                session_locked(session_id=self.session.pk)
                if self.lock_writes
                else contextlib.nullcontext()
            )
            with lease, transaction.atomic():
                self._write(namespace, key, value)
        except SessionBusy as exc:
            raise CallbackRefused(str(exc), code="session_busy") from None
        if self.on_write is not None:
            self.on_write(namespace, key, value)

    def _write(self, namespace: str, key: str, value: Any) -> None:
        rows = PluginData.objects.filter(
            session=self.session, plugin_id=self.package, namespace=namespace, key=key
        )
        if value is None:
            rows.delete()
            return
        self._check_quota(namespace=namespace, key=key, value=value)
        PluginData.objects.update_or_create(
            session=self.session,
            plugin_id=self.package,
            namespace=namespace,
            key=key,
            defaults={"value": value},
        )

    def _check_quota(self, *, namespace: str, key: str, value: Any) -> None:
        """The package's quota in this session, counted with this write replacing the key's
        current value; over it, the write is refused whole (the RPC's earlier writes stay)."""
        keys, size = plugin_data_usage(session_id=self.session.pk, plugin=self.package)
        old = (
            PluginData.objects.filter(
                session=self.session, plugin_id=self.package, namespace=namespace, key=key
            )
            .values_list("size", flat=True)
            .first()
        )
        keys += 1 if old is None else 0
        new_size = value_size(value)
        if old is not None and new_size <= old:
            return  # a write that does not grow the package's data is never refused
        try:
            check_quota(
                plugin=self.package,
                namespace=namespace,
                key=key,
                keys=keys,
                size=size - (old or 0) + new_size,
            )
        except WriteRefused as exc:
            raise CallbackRefused(str(exc), code=exc.code) from None

    # ------------------------------------------------------------------ store

    def store_get_session(self, *, package: str, runtime: str | None) -> dict[str, Any]:
        return store_reads.session_record(self.session)

    def _trusted(self) -> bool:
        """Bundled code, judged as the host pool judges it: where the package was found."""
        from pluginhost.pool import manifest_trust

        manifest = self.manifest
        if manifest is None:
            from sessions.selectors import installed_manifests

            manifest = installed_manifests().get(self.package)
        return manifest is not None and manifest_trust(manifest) == "bundled"

    def store_get_world(
        self, *, package: str, runtime: str | None, world_id: str | None
    ) -> dict[str, Any] | None:
        store_reads.require_trusted(
            trusted=self._trusted(), package=self.package, method="getWorld"
        )
        return store_reads.world_record(self.session, world_id)

    def store_list_characters(self, *, package: str, runtime: str | None) -> list[dict[str, Any]]:
        trusted = self._trusted()
        store_reads.require_trusted(trusted=trusted, package=self.package, method="listCharacters")
        return store_reads.characters(self.session)

    def store_get_character(
        self, *, package: str, runtime: str | None, character_id: str
    ) -> dict[str, Any] | None:
        trusted = self._trusted()
        store_reads.require_trusted(trusted=trusted, package=self.package, method="getCharacter")
        return store_reads.character(self.session, character_id)

    def store_list_player_inputs(
        self, *, package: str, runtime: str | None
    ) -> list[dict[str, Any]]:
        return store_reads.player_inputs(self.session)

    def store_read_turn_messages(
        self, *, package: str, runtime: str | None, after: str | None, limit: int
    ) -> dict[str, Any]:
        limit = max(1, min(int(limit), MAX_MESSAGES_PAGE))
        messages: list[dict[str, Any]] = []
        turns = Turn.objects.filter(
            session=self.session, status=Turn.Status.COMMITTED, kind=Turn.Kind.PLAYER
        ).order_by("created_at")
        for turn in turns:
            if turn.player_message:
                messages.append(
                    {
                        "id": f"{turn.pk}:user",
                        "turnId": str(turn.pk),
                        "role": "user",
                        "content": turn.player_message,
                        "compacted": False,
                    }
                )
            if turn.narrative_text:
                messages.append(
                    {
                        "id": f"{turn.pk}:assistant",
                        "turnId": str(turn.pk),
                        "role": "assistant",
                        "content": turn.narrative_text,
                        "compacted": False,
                    }
                )
        start = 0
        if after is not None:
            ids = [m["id"] for m in messages]
            start = ids.index(after) + 1 if after in ids else len(messages)
        page = messages[start : start + limit]
        cursor = page[-1]["id"] if page else after
        return {"messages": page, "cursor": cursor, "hasMore": start + limit < len(messages)}
