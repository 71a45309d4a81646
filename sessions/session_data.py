"""A turn's plugin data: the session's rows read once, and the commit's checked writes.

The session's plugin data is read once, when the turn first needs any of it (a ctx read, the
world's characters and lore, a quota), and every later read of the turn is answered from that
copy: one statement, and no row read twice. The commit writes each value only if its row is
still the one read (same id, updated_at and value), else raises StaleData; its retry reads each
value it writes afresh under the session row lock (docs/sessions.md, "Commit rules").
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from core.sql import Table, insert, read
from sessions import selectors
from sessions.models import PluginData, Session
from sessions.operations import MISSING, value_size


class StaleData(Exception):
    """A plugin-data row the turn read was changed by someone else (a background job's commit)
    before the turn's commit wrote it: the commit runs again on values read afresh."""


@dataclass(frozen=True)
class _Row:
    id: int
    value: Any
    size: int
    updated_at: Any


_ROW_FIELDS = ("plugin_id", "namespace", "key", "value", "size", "updated_at")


class SessionData:
    """DatabaseStore's plugin data (a mixin over the store's session)."""

    session: Session
    _data: dict[tuple[str, str, str], _Row] | None = None
    _fresh = False  # the commit's retry: read each written value under the row lock

    def _rows(self) -> dict[tuple[str, str, str], _Row]:
        if self._data is None:
            # Plain SQL (core/sql.py): every turn and every job reads them, and compiling the
            # queryset cost more than a small session's rows take to read.
            data = Table(PluginData)
            order = ", ".join(data.col(name) for name in ("plugin_id", "namespace", "key"))
            rows = read(
                PluginData,
                f"{data.col('session')} = %s ORDER BY {order}",
                [data.value("session", self.session.pk)],
                fields=_ROW_FIELDS,
            )
            self._data = {
                (r.plugin_id, r.namespace, r.key): _Row(r.id, r.value, r.size, r.updated_at)
                for r in rows
            }
        return self._data

    def stored(self, plugin: str, namespace: str, key: str) -> Any:
        row = self._rows().get((plugin, namespace, key))
        # A copy: what the turn does with a value never changes what was read.
        return MISSING if row is None else copy.deepcopy(row.value)

    def stored_list(self, plugin: str, namespace: str) -> dict[str, Any]:
        return {
            k: copy.deepcopy(row.value)
            for (p, n, k), row in self._rows().items()
            if p == plugin and n == namespace
        }

    def plugin_data_usage(self, plugin: str) -> tuple[int, int]:
        """(keys, bytes) the package keeps in the session now: its quota's measure."""
        if self._fresh:
            return selectors.plugin_data_usage(session_id=self.session.pk, plugin=plugin)
        rows = [row for (p, _, _), row in self._rows().items() if p == plugin]
        return len(rows), sum(row.size for row in rows)

    def latest(self, plugin: str, namespace: str, key: str) -> Any:
        """The stored value the commit builds on: as the turn read it, or (its retry) read
        now under the session row lock."""
        if not self._fresh:
            return self.stored(plugin, namespace, key)
        row = (
            PluginData.objects.filter(
                session_id=self.session.pk, plugin_id=plugin, namespace=namespace, key=key
            )
            .only("value")
            .first()
        )
        return MISSING if row is None else row.value

    def plugin_data_fresh(self) -> None:
        self._fresh = True

    def plugin_data_write(self, values: Mapping[Any, Any]) -> None:
        """The kept values as PluginData rows (MISSING deletes); StaleData when a row the turn
        read changed since."""
        if not self._fresh:
            self._write_checked(values)
            return
        for (plugin, namespace, key), value in values.items():
            if value is MISSING:
                PluginData.objects.filter(
                    session_id=self.session.pk, plugin_id=plugin, namespace=namespace, key=key
                ).delete()
            else:
                PluginData.objects.update_or_create(
                    session_id=self.session.pk,
                    plugin_id=plugin,
                    namespace=namespace,
                    key=key,
                    defaults={"value": value},
                )

    def _write_checked(self, values: Mapping[Any, Any]) -> None:
        rows = self._rows()
        for (plugin, namespace, key), value in values.items():
            row = rows.get((plugin, namespace, key))
            # Same row, same write time and same value: a writer that sets the value without
            # touching updated_at (a bulk UPDATE) is caught too.
            same = {"pk": row.id, "updated_at": row.updated_at} if row else {}
            if row is not None and row.value is not None:
                same["value"] = row.value
            if row is None and value is MISSING:
                continue  # nothing to delete (a row written since is left as it is)
            if row is None:
                written = insert(
                    PluginData(
                        session_id=self.session.pk,
                        plugin_id=plugin,
                        namespace=namespace,
                        key=key,
                        value=value,
                        size=value_size(value),
                        updated_at=timezone.now(),
                    ),
                    ignore_conflicts=True,
                )
            elif value is MISSING:
                written = bool(PluginData.objects.filter(**same).delete()[0])
            else:
                written = bool(
                    PluginData.objects.filter(**same).update(
                        value=value, size=value_size(value), updated_at=timezone.now()
                    )
                )
            if not written:
                raise StaleData(f"{plugin}/{namespace}/{key} changed since this turn read it")
