"""The session page: for now, the player's own settings panels over the world's presets."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from sessions.models import Session
from worlds import selectors
from worlds.fields import FieldError
from worlds.views import build_panels, handle_panel_post


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def session_detail(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    session = Session.objects.select_related("world", "owner").filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    # A session's settings are its player's; other players may not even look.
    if not selectors.session_can_edit(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    posted: dict[str, tuple[dict[str, str], list[FieldError]]] = {}
    status = 200
    if request.method == "POST":
        response, posted = handle_panel_post(
            request, world=session.world, session=session, page_url=request.path
        )
        if response is not None:
            return response
        status = 422
    panels = build_panels(world=session.world, session=session, can_edit=True, posted=posted)
    context = {
        "session": session,
        "world": session.world,
        "panels": panels,
        "slots": selectors.model_slots(),
    }
    return render(request, "sessions/session_detail.html", context, status=status)
