"""A player's answer to a form (an Interaction row): checked, stored, and its follow-up turn run.

Above the turn it runs (sessions.turns), and so apart from services.py, which the turn uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils import timezone

from core.errors import issue, pointer
from eventlog.errors import SessionProblem
from eventlog.services import event_append
from pluginhost.errors import PluginHostError
from pluginhost.services import plugin_form_validate
from sessions import selectors
from sessions.actions import acting_seat, form_answer_action
from sessions.errors import FormRejected
from sessions.forms import form_check_values, form_player_line
from sessions.locks import session_lock_acquire, session_lock_release
from sessions.models import Interaction, Session, Turn
from sessions.services import session_require_active, session_resolve, session_settle
from sessions.turns import TurnRequest, turn_run


def interaction_submit(
    *, session: Session, interaction_id: str, values: Mapping[str, Any], username: str = ""
) -> dict[str, Any]:
    """The player's answer to a pending form; returns the follow-up turn's result.

    Like a player action it first waits for the settle jobs, then takes the session lock. Under
    the lock: an answered form is refused (409 interaction_already_submitted); then the field
    checks and the package's validator run, and a refusal is FormRejected (422, its issues) with
    nothing stored. Accepted values are stored and the follow-up turn runs with a plain line as
    the player's message and the answer as its action. Each refusal is also an error.occurred
    event on the session stream.
    """
    if selectors.interaction_get(session=session, interaction_id=interaction_id) is None:
        raise SessionProblem(
            f"no form {interaction_id!r} in this session", code="not_found", status=404
        )
    settle = session_settle(session_id=session.pk)
    token = session_lock_acquire(session_id=session.pk)
    try:
        session.refresh_from_db()
        session_require_active(session=session)
        # Read again under the lock: the answer that held it before us may have been this one.
        interaction = selectors.interaction_get(session=session, interaction_id=interaction_id)
        if interaction is None:
            raise SessionProblem(
                f"no form {interaction_id!r} in this session", code="not_found", status=404
            )
        if interaction.status == Interaction.Status.SUBMITTED:
            raise _form_refusal(
                session,
                interaction_id,
                SessionProblem(
                    "this form was already answered; a form is answered once",
                    code="interaction_already_submitted",
                ),
            )
        kept, issues = form_check_values(interaction.form, values)
        if not issues:
            try:
                issues = _validator_issues(session=session, interaction=interaction, values=kept)
            except SessionProblem as exc:
                raise _form_refusal(session, interaction_id, exc) from None
        if issues:
            raise _form_refusal(
                session,
                interaction_id,
                FormRejected(
                    "the form was not accepted",
                    extra={"issues": issues},
                    details={"issues": [_form_issue(i) for i in issues]},
                ),
            )
        request = TurnRequest(
            message=form_player_line(interaction.form, kept),
            actions=[
                form_answer_action(
                    seat=acting_seat(session.seats or [], username),
                    interaction_id=interaction_id,
                    values=kept,
                )
            ],
            settle=settle,
            answering=interaction.runtime_id,
        )
        Interaction.objects.filter(pk=interaction.pk).update(
            status=Interaction.Status.SUBMITTED, values=kept, submitted_at=timezone.now()
        )
    except BaseException:
        session_lock_release(session_id=session.pk, token=token)
        raise
    try:
        return turn_run(session=session, request=request, token=token)  # releases the lock
    finally:
        # The answer stays answered even when its turn fails: the row names that turn.
        if Turn.objects.filter(pk=request.turn_id).exists():
            Interaction.objects.filter(pk=interaction.pk).update(answer_turn_id=request.turn_id)


def _form_issue(found: Mapping[str, Any]) -> dict[str, str]:
    # A field's problem points at its value in the answer; a whole-form one at the values.
    field = found.get("field")
    tokens = ["body", "values", field] if field else ["body", "values"]
    return issue(pointer(tokens), "form_rejected", str(found.get("message") or ""))


def _form_refusal(session: Session, interaction_id: str, problem: SessionProblem) -> SessionProblem:
    event_append(
        session_id=session.pk,
        type="error.occurred",
        payload={
            "code": problem.code,
            "interactionId": interaction_id,
            "message": problem.message,
            **problem.extra,
        },
    )
    return problem


def _validator_issues(
    *, session: Session, interaction: Interaction, values: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The issues of the form's named validator (none without one), as {"field", "message"}.

    The validator is the package's code, so it runs only while the package is active in the
    session; its context carries the session's locale and the package's translations for it.
    """
    name = (interaction.form.get("validation") or {}).get("name")
    if not name:
        return []
    plugin = interaction.plugin_id
    resolution, installed = session_resolve(session=session, save=False)
    if plugin not in resolution.active or plugin not in installed:
        raise SessionProblem(
            f"package {plugin}, whose validator {name} checks this form, is not active in this "
            "session",
            code="plugin_not_active",
        )
    manifest = installed[plugin]
    context: dict[str, Any] = {"locale": session.locale}
    translations = selectors.package_messages(manifest=manifest, locale=session.locale)
    if translations is not None:
        context["messages"] = {"translations": translations}
    try:
        verdict = plugin_form_validate(
            manifest=manifest,
            name=str(name),
            values=values,
            data={"interactionId": interaction.interaction_id, **interaction.form},
            context=context,
        )
    except PluginHostError as exc:
        raise SessionProblem(
            f"the validator {name} of {plugin} failed: {exc.message}",
            code="form_validator_failed",
            status=502,
        ) from None
    if verdict.ok:
        return []
    issues = [{"field": None, "message": verdict.form_error}] if verdict.form_error else []
    issues += [
        {"field": item.get("field") or None, "message": str(item.get("message") or "")}
        for item in verdict.field_errors
    ]
    # A validator that says no without saying why still refuses, with a sentence of ours.
    return issues or [{"field": None, "message": f"The form was refused by {name}."}]
