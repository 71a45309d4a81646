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
from sessions.turn_state import DROPPED, SUCCEEDED, LeaseLost, TurnState


def turn_commit(state: TurnState, *, session_locked: bool = False) -> dict[str, Any]:
    """One transaction: plugin data, exports, ledger, versions, the turn row, jobs, events.

    session_locked: the caller's transaction already holds the session row lock (a job's
    commit), so the session read when the turn started stands in for a locked re-read.
    """
    hooks.pre_state_commit(state)
    committed_sources = hooks.state_commit_sources(state)
    story = [rid for rid, r in state.results.items() if r.story]
    store = state.store
    with store.commit_transaction():
        session = store.session_for_commit(locked=session_locked)
        # A background commit holds the row lock only: it never waits for a player's turn,
        # and a stored value it moves is exactly what that turn's commit re-checks.
        if state.token is not None and session.lock_token != state.token:
            raise LeaseLost("this turn lost the session lock before it could commit")
        # The commit reads the stored value of every key it writes; kept as the turn's undo log
        # (Turn.undo, what sessions/rewind.py restores), so the log costs no read of its own.
        replaced: dict[tuple[str, str, str], Any] = {}

        def load_latest(plugin: str, namespace: str, key: str) -> Any:
            replaced[(plugin, namespace, key)] = value = state.stored(plugin, namespace, key)
            return value

        outcome = state.overlay.commit(load_latest=load_latest, story=story)
        for dropped in outcome.dropped:
            result = state.results.get(dropped.runtime)
            if result is not None and not result.story:
                result.status, result.code, result.reason = DROPPED, dropped.code, dropped.message
            elif result is not None:
                # The story stays (it already reached the player); only its writes are lost.
                result.reason = f"its writes were not saved: {dropped.message}"
        store.plugin_data_write(outcome.values)
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
        _session_update(state, session)
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
        told = _told(state, kept)
        commit_info["narrative"] = [
            {"runtime": rid, **segment} for rid, segment in told if rid != state.narrative_source
        ]
        story_text = "\n\n".join(segment["content"] for _, segment in told if segment["content"])
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
    hooks.post_state_commit(state, committed_sources, kept)
    return commit_info


def _session_update(state: TurnState, session: Session) -> None:
    """The session's trigger ledger, package and setup versions, turn count and phase."""
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
    if update:
        state.store.session_update(update)
    for key, value in update.items():
        setattr(state.session, key, value)


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
