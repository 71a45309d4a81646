"""Where a turn reads and writes: the small storage interface its steps go through.

The turn's steps (sessions/turns.py) never query a table themselves; they ask a TurnStore. Two
implement it: DatabaseStore, the session's rows (every real turn), and
sessions.memory_store.MemoryStore, a dict (the offline runtime cases, `manage.py test_runtime`),
so both run the one pipeline. What differs between them is only here: where data lives, who
answers a plugin's ctx callbacks (a runtime's, and a lifecycle hook's through hook_dispatcher),
and which agents and model an offline case lets run.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction
from django.utils import timezone

from catalogue.manifest.types import Manifest, RuntimeManifest, thaw
from core.sql import insert, update
from pluginhost.callbacks import HostCallbacks
from sessions import hooks, selectors
from sessions.callbacks import SessionCallbacks
from sessions.live_events import HeldEvents
from sessions.locks import session_lock_renew
from sessions.models import Interaction, RecordedExport, Session, Turn
from sessions.operations import MISSING
from sessions.session_data import SessionData
from worlds.services import user_settings_for


@dataclass(frozen=True)
class DeferredJob:
    """A detached runtime the turn defers: what its job row is created with."""

    plugin: str
    runtime: str
    source_turn: str
    inputs: dict[str, Any]
    detached: Any
    package_version: str


class TurnStore(Protocol):
    session: Session

    # reads while the turn runs
    def stored(self, plugin: str, namespace: str, key: str) -> Any: ...
    def stored_list(self, plugin: str, namespace: str) -> dict[str, Any]: ...
    def plugin_data_usage(self, plugin: str) -> tuple[int, int]: ...
    def world(self) -> dict[str, Any]: ...
    def user_settings(
        self, package_id: str, manifest: Manifest | None = None
    ) -> dict[str, Any]: ...
    def export_latest(self, plugin: str, record_as: str) -> Any: ...
    def interaction_exists(self, interaction_id: str) -> bool: ...
    def history_rows(
        self, max_turns: int | None, window: Callable[[int], int | None] | None
    ) -> list[tuple[str, str]]: ...
    def history_extended(self, active: Sequence[Manifest]) -> bool: ...
    def history_log(self) -> Any: ...
    def now(self) -> str: ...

    # what plugin code and agents are given
    def callbacks(
        self,
        *,
        package: str,
        runtime: str,
        overlay: Any,
        on_emit: Callable[[str, dict[str, Any]], None],
        manifest: Manifest | None,
        on_recurse: Callable[..., dict[str, Any]] | None = None,
    ) -> HostCallbacks: ...
    def hook_dispatcher(
        self, *, manifests: Sequence[Manifest], turn_id: str, emit: Any, settings_for: Any
    ) -> hooks.HookDispatcher: ...
    def prompt_segments(
        self, *, active: Sequence[Manifest], turn_id: str, message: str, world: Any,
        failures: list[dict[str, Any]], runtime: str, overlay: Any,
    ) -> list[dict[str, Any]]: ...  # fmt: skip
    def agent_refused(self, manifest: Manifest, runtime: RuntimeManifest) -> str | None: ...
    def agent_endpoint(self, runtime: RuntimeManifest, settings: Mapping[str, Any]) -> Any: ...
    def agent_ran(self, runtime: str, run: Any) -> None: ...

    # events and the lease
    def append_event(self, type: str, payload: Mapping[str, Any]) -> None: ...
    def events_hold(self) -> int: ...
    def events_undo(self, mark: int) -> None: ...
    def events_flush(self) -> None: ...
    def lease_renew(self, token: str) -> None: ...

    # the commit
    def commit_transaction(self, *, retryable: bool = False) -> Any: ...
    def session_for_commit(self, *, locked: bool) -> Session: ...
    def latest(self, plugin: str, namespace: str, key: str) -> Any: ...
    def plugin_data_fresh(self) -> None: ...
    def plugin_data_write(self, values: Mapping[Any, Any]) -> None: ...
    def export_record(
        self, *, plugin: str, runtime: str, record_as: str, value: Any, turn: Turn
    ) -> None: ...
    def jobs_defer(self, jobs: Sequence[DeferredJob]) -> list[str]: ...
    def session_update(self, update: Mapping[str, Any], *, token: str | None = None) -> bool: ...
    def turn_save(self, turn: Turn) -> None: ...
    def interaction_create(
        self, *, turn: Turn, plugin: str, runtime: str, interaction_id: str, form: Any
    ) -> None: ...
    def hooks_record(self, turn: Turn) -> None: ...


class DatabaseStore(SessionData):
    """The session's rows: every turn a player, a form or a job runs.

    Its plugin data (sessions/session_data.py): read once a turn, written with a check.
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        # Held until the commit or for FLUSH_AFTER_SECONDS (sessions/live_events.py); written
        # early only when the turn is not inside a transaction of its caller.
        self.events = HeldEvents(session.pk, live=not transaction.get_connection().in_atomic_block)
        self._settings: dict[str, dict[str, Any]] | None = None

    # -------------------------------------------------------------- reads

    def world(self) -> dict[str, Any]:
        world = self.session.world
        data = [(where, row.value) for where, row in self._rows().items()]
        return {
            "id": world.world_id,
            "name": world.display_name,
            "description": world.description,
            # As the last good sync of characters/characters.json stored them, with the
            # session's own (character.upsert) over them.
            "characters": selectors.session_characters(session=self.session, data=data),
            # The character field definitions, under the spec's name (data/world.data.yaml).
            "characterSchema": list(world.character_schema or []),
            # The world's data/lorebook.yaml, then the session lore packages wrote
            # (lorebook.upsert), as Covel's context lists its session lorebook.
            "lorebook": [
                *(world.lorebook or []),
                *selectors.session_lore(session=self.session, data=data),
            ],
            # Read when the turn starts, so a switched current character shows from the next turn.
            "seats": list(self.session.seats or []),
        }

    def user_settings(self, package_id: str, manifest: Manifest | None = None) -> dict[str, Any]:
        # Once per package and turn: ctx.userSettings and an agent's slot read the same.
        if self._settings is None:
            self._settings = {}
        if package_id not in self._settings:
            data = None if manifest is None else thaw(manifest.data)
            self._settings[package_id] = user_settings_for(
                package_id=package_id, session=self.session, manifest=data
            )
        return copy.deepcopy(self._settings[package_id])

    def export_latest(self, plugin: str, record_as: str) -> Any:
        row = selectors.export_latest(session=self.session, plugin=plugin, record_as=record_as)
        return MISSING if row is None else row.value

    def interaction_exists(self, interaction_id: str) -> bool:
        return selectors.interaction_exists(session=self.session, interaction_id=interaction_id)

    def _played(self) -> Any:
        return Turn.objects.filter(
            session_id=self.session.pk, kind=Turn.Kind.PLAYER, status=Turn.Status.COMMITTED
        )

    def history_rows(
        self, max_turns: int | None, window: Callable[[int], int | None] | None
    ) -> list[tuple[str, str]]:
        """(player message, story) of the committed player turns, oldest first; one query, and
        a count first when a compaction hook may widen the window."""
        query = (
            self._played().order_by("-created_at").values_list("player_message", "narrative_text")
        )
        if max_turns is not None and window is not None:
            max_turns = window(query.count())
        rows = list(query if max_turns is None else query[:max_turns])
        rows.reverse()
        return rows

    def history_extended(self, active: Sequence[Manifest]) -> bool:
        from sessions import extensions

        return extensions.history_extended(session=self.session, active=active)

    def history_log(self) -> Any:
        return (
            self._played()
            .order_by("created_at")
            .values_list("pk", "player_message", "narrative_text", "created_at")
        )

    def now(self) -> str:
        return timezone.now().isoformat()

    # -------------------------------------------------------------- plugin code and agents

    def callbacks(
        self,
        *,
        package: str,
        runtime: str,
        overlay: Any,
        on_emit: Callable[[str, dict[str, Any]], None],
        manifest: Manifest | None,
        on_recurse: Callable[..., dict[str, Any]] | None = None,
    ) -> HostCallbacks:
        return SessionCallbacks(
            session=self.session,
            package=package,
            runtime=runtime,
            overlay=overlay,
            on_emit=on_emit,
            manifest=manifest,
            on_recurse=on_recurse,
        )

    def hook_dispatcher(
        self, *, manifests: Sequence[Manifest], turn_id: str, emit: Any, settings_for: Any
    ) -> hooks.HookDispatcher:
        return hooks.HookDispatcher(
            session=self.session,
            manifests=manifests,
            turn_id=turn_id,
            emit=emit,
            settings_for=settings_for,
        )

    def prompt_segments(
        self,
        *,
        active: Sequence[Manifest],
        turn_id: str,
        message: str,
        world: Any,
        failures: list[dict[str, Any]],
        runtime: str,
        overlay: Any,
    ) -> list[dict[str, Any]]:
        from sessions import extensions

        return extensions.prompt_segments(
            session=self.session,
            active=active,
            turn_id=turn_id,
            player_message=message,
            world=world,
            failures=failures,
        )

    def agent_refused(self, manifest: Manifest, runtime: RuntimeManifest) -> str | None:
        return None  # every active agent runs

    def agent_endpoint(self, runtime: RuntimeManifest, settings: Mapping[str, Any]) -> Any:
        return None  # the runtime's model slot (agents.selectors)

    def agent_ran(self, runtime: str, run: Any) -> None:
        pass

    # -------------------------------------------------------------- events and the lease

    def append_event(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.add(type, payload)

    def events_hold(self) -> int:
        return self.events.hold()

    def events_undo(self, mark: int) -> None:
        self.events.undo(mark)

    def events_flush(self) -> None:
        self.events.flush()

    def lease_renew(self, token: str) -> None:
        session_lock_renew(session_id=self.session.pk, token=token)

    # -------------------------------------------------------------- the commit

    @contextmanager
    def commit_transaction(self, *, retryable: bool = False) -> Iterator[None]:
        # No savepoint inside a caller's transaction (a job's commit): a failure here rolls
        # that whole transaction back anyway. retryable: a commit that may run again after
        # StaleData (inside a caller's transaction, a test's, that takes a savepoint).
        with transaction.atomic(savepoint=retryable):
            yield

    def session_for_commit(self, *, locked: bool) -> Session:
        """The session row, locked. locked: the caller's transaction already holds the lock (a
        job's commit), so the session read when the turn started stands in for a re-read."""
        if locked:
            return self.session
        # NO KEY UPDATE, the mode every session-row lock here takes (event appends included):
        # it leaves other transactions' foreign-key checks free, so none can deadlock on it.
        return Session.objects.select_for_update(no_key=True).get(pk=self.session.pk)

    def export_record(
        self, *, plugin: str, runtime: str, record_as: str, value: Any, turn: Turn
    ) -> None:
        RecordedExport.objects.create(
            session_id=self.session.pk,
            plugin_id=plugin,
            runtime_id=runtime,
            record_as=record_as,
            value=value,
            turn=turn,
        )

    def jobs_defer(self, jobs: Sequence[DeferredJob]) -> list[str]:
        """One RuntimeJob row per deferred runtime, in the commit's transaction; their ids."""
        if not jobs:
            return []
        from jobs.services import job_defer

        return [
            str(
                job_defer(
                    session_id=self.session.pk,
                    plugin_id=job.plugin,
                    runtime_id=job.runtime,
                    source_turn=job.source_turn,
                    inputs=job.inputs,
                    detached=job.detached,
                    package_version=job.package_version,
                ).job_id
            )
            for job in jobs
        ]

    def session_update(self, update: Mapping[str, Any], *, token: str | None = None) -> bool:
        """UPDATE the session row; with a token, only while that lease holds it (the UPDATE
        takes the row lock and checks the lease in one statement)."""
        rows = Session.objects.filter(pk=self.session.pk)
        if token is not None:
            rows = rows.filter(lock_token=token)
            # The lease's own expiry is left as it is: the heartbeat renews it.
            update = update or {"lock_token": token}
        return bool(rows.update(**update))

    def turn_save(self, turn: Turn) -> None:
        if turn._state.adding:
            insert(turn)  # a background turn's row is new: one plain INSERT
        elif not update(turn):  # the row the turn's start wrote, without compiling an UPDATE
            turn.save()  # (gone meanwhile: what save() would do)

    def interaction_create(
        self, *, turn: Turn, plugin: str, runtime: str, interaction_id: str, form: Any
    ) -> None:
        Interaction.objects.create(
            session_id=self.session.pk,
            source_turn=turn,
            plugin_id=plugin,
            runtime_id=runtime,
            interaction_id=interaction_id,
            form=form,
        )

    def hooks_record(self, turn: Turn) -> None:
        """Save the hook log again (a PostStateCommit hook failed after the turn row was saved)."""
        Turn.objects.filter(pk=turn.pk).update(commit=turn.commit)
