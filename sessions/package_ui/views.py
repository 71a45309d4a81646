"""The fragment the play page fetches again when a namespace a package UI watches changes."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from sessions import selectors as play_selectors
from sessions.models import Session, Turn
from sessions.package_ui.selectors import session_package_ui


@login_required
@require_http_methods(["GET", "HEAD"])
def package_ui_fragment(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The panels (no ?turn=), or one turn's message blocks (?turn=<turn id>)."""
    session = Session.objects.filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    if not play_selectors.session_can_access(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    turn = request.GET.get("turn")
    if turn:
        try:
            turn = str(uuid.UUID(turn))
        except ValueError:
            raise Http404("no such turn") from None
        rows = list(Turn.objects.filter(session=session, pk=turn))
        ui = session_package_ui(session=session, turn_ids=[turn], turns=rows)
        context = {"package_ui": ui, "turn": {"pk": turn}}
        return render(request, "sessions/package_ui/_message.html", context)
    ui = session_package_ui(session=session, turn_ids=())
    return render(
        request, "sessions/package_ui/_panels_box.html", {"package_ui": ui, "session": session}
    )
