"""Undo and regenerate the last player turn (the play page's two buttons).

Undo rewinds the session to the moment the last player turn started: its story goes, and so
does every turn after it (background turns of its jobs, a form's answer turn); every plugin data
key written since then goes back to the value it had then; exports recorded by those turns and
forms they opened are removed, a form they answered waits again; the turn count steps back. Regenerate is an undo followed by the
same player message run again, with the old turn as its execution source, so ctx.random draws
the same numbers and a dice roll keyed by the source turn is not rolled again.

Covel keeps each turn's state patches (apps/server/src/db/schema/state-entries.ts,
statePatchCommits keyed by turn, runtime and plugin) and a retried turn runs with
ctx.execution.sourceTurnId set to the old one (spec: covel-plugins-with-local-code.md). Here the
event log is that journal: every plugin data write, by a turn or an action, appends a
plugin-data.changed event with the written values (sessions/turns.py, sessions/services.py), so
the value a key had before the turn is the last one an earlier event wrote.

Refused while a background job of the session is still queued or running: its commit would
write into the rewound state.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from eventlog.errors import SessionProblem
from eventlog.models import SessionEvent
from eventlog.services import event_append
from jobs.models import TERMINAL_STATES, RuntimeJob
from sessions.locks import session_locked
from sessions.models import Interaction, PluginData, RecordedExport, Session, Turn
from sessions.services import session_require_active
from sessions.turns import TurnRequest, turn_run


def turn_last_player(*, session: Session) -> Turn | None:
    """The player turn undo and regenerate act on: the latest one, committed or failed."""
    return (
        Turn.objects.filter(session=session, kind=Turn.Kind.PLAYER)
        .exclude(status=Turn.Status.RUNNING)
        .order_by("-created_at")
        .first()
    )


def _check(session: Session, turn_id: str) -> Turn:
    turn = turn_last_player(session=session)
    if turn is None:
        raise SessionProblem("there is no turn to undo yet", code="no_turn", status=409)
    if str(turn.pk) != str(turn_id):
        # A stale page (or a second click) must not undo the turn before the one it showed.
        raise SessionProblem(
            "only the last turn can be undone or regenerated; reload the page",
            code="not_last_turn",
            status=409,
        )
    busy = (
        RuntimeJob.objects.filter(session_id=session.pk).exclude(state__in=TERMINAL_STATES).count()
    )
    if busy:
        raise SessionProblem(
            f"{busy} background job(s) of this session are still running; try again when they end",
            code="jobs_running",
            status=409,
        )
    return turn


def _start_seq(session: Session, turn: Turn) -> int:
    """The seq of the turn's turn.started event: everything after it is rewound."""
    for seq, payload in (
        SessionEvent.objects.filter(session=session, type="turn.started")
        .order_by("-seq")
        .values_list("seq", "payload")
    ):
        if (payload or {}).get("turnId") == str(turn.pk):
            return int(seq)
    raise SessionProblem(
        "this turn's start is not in the event log, so its writes cannot be rolled back",
        code="turn_not_rewindable",
        status=409,
    )


def _values_before(later: list[Turn]) -> dict[tuple, Any]:
    """The value each key had before the first of `later` (oldest first) wrote it: the undo log
    of the earliest rewound turn that wrote the key (Turn.undo; the change events name keys
    only, never values). An RPC action's immediate writes are not a turn's and stay."""
    before: dict[tuple, Any] = {}
    for turn in later:
        for plugin, namespace, key, value in turn.undo or []:
            before.setdefault((plugin, namespace, key), value)
    return before


def _rewind(session: Session, turn: Turn) -> dict[str, Any]:
    _start_seq(session, turn)  # refuses a turn whose start is not in the log
    rewound = list(
        Turn.objects.filter(session=session, created_at__gte=turn.created_at).order_by("created_at")
    )
    later = [t.pk for t in rewound]
    before = _values_before(rewound)
    restored = []
    for (plugin, namespace, key), value in sorted(
        before.items(), key=lambda item: tuple(map(str, item[0]))
    ):
        rows = PluginData.objects.filter(
            session=session, plugin_id=plugin, namespace=namespace, key=key
        )
        if value is None:
            rows.delete()
        else:
            PluginData.objects.update_or_create(
                session=session,
                plugin_id=plugin,
                namespace=namespace,
                key=key,
                defaults={"value": value},
            )
        restored.append(
            {
                "plugin": plugin,
                "namespace": namespace,
                "key": key,
                "value": value,
                "deleted": value is None,
            }
        )
    RecordedExport.objects.filter(session=session, turn_id__in=later).delete()
    # A form whose answer is rewound waits for an answer again.
    Interaction.objects.filter(session=session, answer_turn_id__in=later).update(
        status=Interaction.Status.PENDING, values=None, submitted_at=None, answer_turn=None
    )
    # Forms the rewound turns opened go with them, answered or not.
    Interaction.objects.filter(session=session, source_turn_id__in=later).delete()
    Turn.objects.filter(pk__in=later).delete()
    count = (
        Turn.objects.filter(session=session, kind=Turn.Kind.PLAYER, status=Turn.Status.COMMITTED)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    ) or 0
    Session.objects.filter(pk=session.pk).update(turn_count=count)
    session.turn_count = count
    if restored:
        event_append(
            session_id=session.pk,
            type="plugin-data.changed",
            payload={"turnId": str(turn.pk), "changes": restored, "undo": True},
        )
    event_append(
        session_id=session.pk,
        type="turn.undone",
        payload={"turnId": str(turn.pk), "removed": [str(t) for t in later], "number": count},
    )
    return {"turnId": str(turn.pk), "removed": [str(t) for t in later], "restored": restored}


def turn_undo(*, session: Session, turn_id: str) -> dict[str, Any]:
    """Undo the last player turn (see the module's docstring)."""
    session_require_active(session=session)
    with session_locked(session_id=session.pk):
        session.refresh_from_db()
        turn = _check(session, turn_id)
        with transaction.atomic():
            return _rewind(session, turn)


def turn_regenerate(*, session: Session, turn_id: str) -> dict[str, Any]:
    """Undo the last player turn and run its message again (same seed: same dice)."""
    session_require_active(session=session)
    with session_locked(session_id=session.pk):
        session.refresh_from_db()
        turn = _check(session, turn_id)
        if Interaction.objects.filter(session=session, answer_turn=turn).exists():
            raise SessionProblem(
                "this turn answered a form; undo it and answer again instead",
                code="turn_answered_form",
                status=409,
            )
        message, source = turn.player_message, str(turn.pk)
        with transaction.atomic():
            _rewind(session, turn)
    request = TurnRequest(message=message, execution_source=source, turn_id=uuid.uuid4())
    return turn_run(session=session, request=request)
