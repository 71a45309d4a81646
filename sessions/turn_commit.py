"""The turn's one commit: plugin data, exports, jobs, the session's ledger and versions, the
turn row, the asks (forms, notifications, story, UI blocks) and the events, in one transaction.

The overlay decides what is kept (sessions.operations.TurnOverlay.commit: each runtime's writes
against the latest stored values, all or nothing, drops cascading to readers); this module
writes what it decided and tells the stream.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from sessions import hooks
from sessions.deferred_jobs import jobs_defer
from sessions.models import Interaction, Session, Turn
from sessions.operations import MISSING
from sessions.session_data import StaleData
from sessions.turn_state import DROPPED, SUCCEEDED, LeaseLost, TurnState


def turn_commit(
    state: TurnState, *, session_locked: bool = False, committed_event: bool = False
) -> dict[str, Any]:
    """One transaction: plugin data, exports, ledger, versions, the turn row, jobs, events.

    session_locked: the caller's transaction already holds the session row lock (a job's
    commit), so the session read when the turn started stands in for a locked re-read.
    committed_event: tell turn.committed in the commit's own events when nothing runs after
    it (no PostStateCommit hook); state.committed_told says whether it was.

    The values the turn read while it ran are the ones the commit builds on, and each write
    checks that its row is still the one read; when a background commit moved one meanwhile,
    the commit runs again with every value it writes read afresh under the session row lock.
    """
    hooks.pre_state_commit(state)
    committed_sources = hooks.state_commit_sources(state)
    story = [rid for rid, r in state.results.items() if r.story]
    store = state.store
    # From here the turn's events go out with the commit (no early write waits on its lock).
    mark = store.events_hold()
    before = _Before(state)
    told = committed_event and not committed_sources
    try:
        try:
            # A job's commit reads afresh at once: its transaction holds the row lock already.
            commit_info, kept = _commit(state, story, session_locked, told, fresh=session_locked)
        except StaleData:
            before.restore(state)
            store.events_undo(mark)
            commit_info, kept = _commit(state, story, session_locked, told, fresh=True)
    except BaseException:
        store.events_undo(mark)  # what the commit told never happened
        state.lease_released = False  # nor the lease freed with it
        raise
    hooks.post_state_commit(state, committed_sources, kept)
    return commit_info


class _Before:
    """What a commit changes on the turn's state, to run it again after StaleData."""

    def __init__(self, state: TurnState) -> None:
        self.results = {
            rid: (r.status, r.code, r.reason, r.job_id) for rid, r in state.results.items()
        }
        self.narrative = state.narrative_text
        self.held = None if state.held_events is None else list(state.held_events)
        self.session = {f: getattr(state.session, f) for f in SESSION_FIELDS}

    def restore(self, state: TurnState) -> None:
        for rid, (status, code, reason, job_id) in self.results.items():
            result = state.results[rid]
            result.status, result.code, result.reason, result.job_id = status, code, reason, job_id
        state.narrative_text = self.narrative
        state.held_events = None if self.held is None else list(self.held)
        for name, value in self.session.items():
            setattr(state.session, name, value)
        state.committed_told = False
        state.lease_released = False


SESSION_FIELDS = ("trigger_ledger", "package_versions", "setup_versions", "turn_count", "phase")


def _commit(
    state: TurnState, story: list[str], session_locked: bool, told: bool, *, fresh: bool
) -> tuple[dict[str, Any], set[str]]:
    store = state.store
    with store.commit_transaction(retryable=not fresh):
        locked = session_locked
        if fresh:
            store.plugin_data_fresh()
        if fresh or (state.token is None and not session_locked):
            # The row lock first, then the values under it (what a background commit takes too).
            session = store.session_for_commit(locked=session_locked)
            if state.token is not None and session.lock_token != state.token:
                raise LeaseLost("this turn lost the session lock before it could commit")
            locked = True
        # The commit builds on the stored value of every key it writes; kept as the turn's undo
        # log (Turn.undo, what sessions/rewind.py restores), so the log costs no read of its own.
        replaced: dict[tuple[str, str, str], Any] = {}

        def load_latest(plugin: str, namespace: str, key: str) -> Any:
            replaced[(plugin, namespace, key)] = value = store.latest(plugin, namespace, key)
            return value

        outcome = state.overlay.commit(load_latest=load_latest, story=story)
        for dropped in outcome.dropped:
            result = state.results.get(dropped.runtime)
            if result is not None and not result.story:
                result.status, result.code, result.reason = DROPPED, dropped.code, dropped.message
            elif result is not None:
                # The story stays (it already reached the player); only its writes are lost.
                result.reason = f"its writes were not saved: {dropped.message}"
        # The session row: its ledger and versions, and (unless held already) its lock taken,
        # with the check that this turn still holds the lease, before any other row is written.
        # A turn whose commit is its last step (turn.committed told with it) frees the lease in
        # the same UPDATE: the next action may start the moment the turn is seen committed.
        release = told and state.release_with_commit and state.token is not None
        if not _session_update(state, token=None if locked else state.token, release=release):
            raise LeaseLost("this turn lost the session lock before it could commit")
        store.plugin_data_write(outcome.values)  # StaleData: a value moved since it was read
        state.turn.undo = [
            [*where, None if replaced.get(where, MISSING) is MISSING else replaced[where]]
            for where in outcome.values
        ]
        changes = [
            {
                "plugin": plugin,
                "namespace": namespace,
                "key": key,
                "deleted": value is MISSING,
            }
            for (plugin, namespace, key), value in outcome.values.items()
        ]
        kept = set(outcome.kept)
        for plugin, runtime, record_as, value in state.exports:
            if runtime in kept and state.results[runtime].status == SUCCEEDED:
                store.export_record(
                    plugin=plugin,
                    runtime=runtime,
                    record_as=record_as,
                    value=value,
                    turn=state.turn,
                )
        job_ids = jobs_defer(state)
        commit_info = {
            "written": [
                {k: c[k] for k in ("plugin", "namespace", "key", "deleted")} for c in changes
            ],
            "refusals": [r.as_dict() for r in outcome.refusals],
            "dropped": [
                {"runtime": d.runtime, "code": d.code, "message": d.message}
                for d in outcome.dropped
            ],
            "jobs": job_ids,
            "settle": state.request.settle,
            "hooks": state.hooks.log,
        }
        told_story = _told(state, kept)
        commit_info["narrative"] = [
            {"runtime": rid, **segment}
            for rid, segment in told_story
            if rid != state.narrative_source
        ]
        story_text = "\n\n".join(
            segment["content"] for _, segment in told_story if segment["content"]
        )
        turn = state.turn
        turn.status = Turn.Status.COMMITTED
        turn.narrative_text = story_text
        turn.blocks = _kept_blocks(state, kept)
        turn.results = [state.results[r].as_dict() for r in state.order]
        turn.commit = commit_info
        turn.finished_at = timezone.now()
        store.turn_save(turn)
        if changes:
            store.append_event("plugin-data.changed", {"turnId": str(turn.pk), "changes": changes})
        for dropped in outcome.dropped:
            state.emit("runtime.status", state.results[dropped.runtime].as_dict())
        state.release_events()
        if story_text != state.narrative_text:
            state.narrative_text = story_text
            state.emit("narrative", {"runtime": state.narrative_source, "text": story_text})
        for block in turn.blocks:
            state.emit("ui.rendered", {"block": block})
        _asks_commit(state, kept)
        if told:
            state.emit("turn.committed", state.summary())
            state.committed_told = True
        # Every event the turn still held, and the commit's own, in one statement.
        store.events_flush()
    return commit_info, kept


def _session_update(state: TurnState, *, token: str | None, release: bool = False) -> bool:
    """The session's trigger ledger, package and setup versions, turn count and phase, from
    the row as the turn read it under its lease (only turns change these). token: the lease
    the UPDATE checks (and whose row it locks); False when the turn no longer holds it."""
    session = state.session
    versions = dict(session.package_versions or {})
    setup_versions = dict(session.setup_versions or {})
    failed_setup = {
        r.package for r in state.results.values() if r.stage == "setup" and r.status != SUCCEEDED
    }
    for manifest in state.active:
        versions[manifest.id] = manifest.version
        if manifest.id not in failed_setup:
            setup_versions[manifest.id] = manifest.version
    update: dict[str, Any] = {}
    if state.request.kind != Turn.Kind.BACKGROUND:
        update = {
            "trigger_ledger": state.ledger,
            "package_versions": versions,
            "setup_versions": setup_versions,
        }
    if state.request.kind == Turn.Kind.PLAYER:
        update["turn_count"] = state.logical_turn
        if session.phase == Session.Phase.SETUP:
            # The first committed player turn ends the setup phase (setup runtimes ran on it).
            update["phase"] = Session.Phase.PLAYING
    if release:
        # Checked against the lease even when the row lock is held already (a retry).
        token = state.token
        update.update(lock_token="", lock_expires=None)
    held = state.store.session_update(update, token=token) if update or token else True
    state.lease_released = release and held
    for key, value in update.items():
        setattr(state.session, key, value)
    return held


def _told(state: TurnState, kept: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The turn's story, in Covel's order: each runtime's text as it finished, the story
    runtime's narrativeOutput at its place, then the narrative.append proposals of the
    runtimes that succeeded and kept their writes."""
    told: list[tuple[str, dict[str, Any]]] = []
    if state.narrative_text and state.narrative_source not in state.order:
        told.append(("", {"content": state.narrative_text, "kind": "story"}))
    for rid in state.order:
        if rid == state.narrative_source and state.narrative_text:
            told.append((rid, {"content": state.narrative_text, "kind": "story"}))
        if rid in kept and state.results[rid].status == SUCCEEDED:
            told.extend((rid, dict(segment)) for segment in state.asks.appended.get(rid, []))
    return told


def _kept_blocks(state: TurnState, kept: set[str]) -> list[dict[str, Any]]:
    """The ui.render blocks of the runtimes that succeeded and kept their writes, as
    Covel's message blocks: {id, type, data, meta: {pluginId, runtimeId, turnId}}."""
    blocks = []
    for rid in state.order:
        result = state.results[rid]
        if rid not in kept or result.status != SUCCEEDED:
            continue
        for block in state.asks.blocks.get(rid, []):
            meta = {"pluginId": result.package, "runtimeId": rid, "turnId": str(state.turn.pk)}
            blocks.append(
                {"id": block["id"], "type": "ui.render", "data": block["data"], "meta": meta}
            )
    return blocks


def _asks_commit(state: TurnState, kept: set[str]) -> None:
    """The forms and notifications of the runtimes that succeeded and kept their writes."""
    for rid in state.order:
        result = state.results[rid]
        if rid not in kept or result.status != SUCCEEDED:
            continue
        for interaction_id, form in state.asks.forms.get(rid, []):
            state.store.interaction_create(
                turn=state.turn,
                plugin=result.package,
                runtime=rid,
                interaction_id=interaction_id,
                form=form,
            )
            state.emit(
                "interaction.created",
                {
                    "interactionId": interaction_id,
                    "kind": Interaction.Kind.FORM,
                    "pluginId": result.package,
                    "runtimeId": rid,
                    "form": form,
                },
            )
        for notice in state.asks.notifications.get(rid, []):
            state.emit(
                "notification.created",
                {
                    "pluginId": result.package,
                    "runtimeId": rid,
                    "title": notice["title"],
                    "body": notice.get("body", ""),
                    "level": notice.get("level", "info"),
                },
            )
