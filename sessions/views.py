"""Session pages: my sessions, a new session from a world, and the play page.

The play page keeps the player's settings panels (the Worlds app's machinery) and adds the
resolution outcomes, the story, live runtime statuses (server-sent events) and plugin data.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from approvals.selectors import packages_usability
from catalogue.models import Package
from eventlog.selectors import last_event_seq
from jobs.models import RuntimeJob
from sessions import rewind, services
from sessions import selectors as play_selectors
from sessions.command_list import session_command_list
from sessions.extensions import session_slots
from sessions.model_needs import packages_missing_slots
from sessions.models import Interaction, Session
from sessions.package_ui.selectors import session_package_ui
from worlds import selectors
from worlds.fields import FieldError
from worlds.models import World
from worlds.views import build_panels, handle_panel_post


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    sessions = play_selectors.session_list(user=request.user)
    worlds = World.objects.loaded().order_by("world_id")
    return render(request, "sessions/session_list.html", {"sessions": sessions, "worlds": worlds})


def _choices(world: World) -> list[dict[str, Any]]:
    """Every loaded package, with the world's ones and core ones ticked."""
    wanted = set(world.plugins or [])
    rows = []
    packages = list(
        Package.objects.loaded()
        .order_by("package_id")
        .only("package_id", "display_name", "description", "kind", "version", "trust")
    )
    # Pending or denied packages are shown with their state and cannot be ticked, unless an
    # earlier approval still stands: sessions then run that version (its kept snapshot).
    installed = play_selectors.installed_manifests()
    usability = packages_usability(
        package_ids=[p.package_id for p in packages],
        paths={pid: manifest.path for pid, manifest in installed.items()},
    )
    # A package whose agent needs a model slot nobody configured would fail every turn: shown
    # greyed with the reason, never ticked (not even when the world lists it).
    no_model = packages_missing_slots(
        manifests={
            p.package_id: installed[p.package_id] for p in packages if p.package_id in installed
        },
        presets=world.plugin_settings or {},
    )
    for package in packages:
        usable = usability[package.package_id]
        slots = no_model.get(package.package_id)
        reason = usable.reason
        if usable.usable and slots:
            reason = f"needs a model: staff have not configured the slot {', '.join(slots)}"
        rows.append(
            {
                "id": package.package_id,
                "name": package.name,
                "description": package.description,
                "core": package.kind == "core",
                "checked": usable.usable
                and not slots
                and (package.kind == "core" or package.package_id in wanted),
                # The version sessions run (the kept one while a newer version waits).
                "version": installed[package.package_id].version
                if package.package_id in installed
                else package.version,
                "trust": package.trust,
                "approval": usable.state,
                "blocked": not usable.usable or bool(slots),
                "needs_model": bool(slots) and usable.usable,
                "reason": reason,
            }
        )
    return rows


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def session_new(request: HttpRequest) -> HttpResponse:
    worlds = list(World.objects.loaded().order_by("world_id"))
    world_id = (
        request.POST.get("world")
        or request.GET.get("world")
        or (worlds[0].world_id if worlds else "")
    )
    world = next((w for w in worlds if w.world_id == world_id), None)
    if request.method == "POST":
        if world is None:
            return render(
                request,
                "sessions/session_new.html",
                {"worlds": worlds, "error": "Pick a world."},
                status=422,
            )
        ticked = request.POST.getlist("plugins")
        core = [c["id"] for c in _choices(world) if c["core"]]
        try:
            session = services.session_create(
                owner=request.user,
                world=world,
                # A ticked core package is not "requested": the resolver adds it as core, which
                # is the truer reason to show; an unticked one is left out on purpose.
                requested=[p for p in ticked if p not in core],
                excluded=[p for p in core if p not in ticked],
                title=request.POST.get("title", ""),
                # Empty means "the world's first player character"; anything else is checked.
                character_id=request.POST.get("character", "").strip() or None,
                # More characters to switch to later ("also play"); checked the same way.
                also_character_ids=[c for c in request.POST.getlist("also") if c.strip()],
            )
        except services.SessionProblem as exc:
            context = _new_context(worlds, world) | {"error": exc.message}
            return render(request, "sessions/session_new.html", context, status=exc.status)
        return redirect(reverse("sessions:detail", args=[session.pk]))
    return render(request, "sessions/session_new.html", _new_context(worlds, world))


def _new_context(worlds: list[World], world: World | None) -> dict[str, Any]:
    return {
        "worlds": worlds,
        "world": world,
        "choices": _choices(world) if world else [],
        # The picker shows only when there is a choice to make.
        "players": selectors.world_player_characters(world=world) if world else [],
    }


# A job that failed only for want of a model says so in its error; shown like a runtime that did.
_NO_MODEL_JOB = re.compile(r"no model is configured for slot '([^']+)'")


def _runtime_states(session: Session, turn: Any) -> list[dict[str, Any]]:
    """The last turn's runtime results, where a deferred runtime shows its job's state: one
    state per runtime, the same the jobs panel shows (one query)."""
    results = list(turn.results or [])
    if not any(r.get("status") == "deferred" for r in results):
        return results
    jobs = {
        job.runtime_id: job
        for job in RuntimeJob.objects.filter(session=session, source_turn=str(turn.pk)).order_by(
            "id"
        )
    }
    merged = []
    for result in results:
        job = jobs.get(result.get("runtime")) if result.get("status") == "deferred" else None
        if job is not None:
            missing = _NO_MODEL_JOB.search(job.error or "")
            result = {
                **result,
                "status": job.state,
                "code": "no-model-configured" if missing else (job.reason or ""),
                "reason": f"needs the '{missing.group(1)}' slot" if missing else (job.error or ""),
            }
        merged.append(result)
    return merged


def _outcome_rows(session: Session) -> list[dict[str, Any]]:
    rows = []
    for package, outcomes in sorted((session.outcomes or {}).items()):
        if not outcomes:
            continue
        verdict = outcomes[-1]
        rows.append({"package": package, "verdict": verdict, "history": outcomes[:-1]})
    return rows


# The play page's plugin data panel: a page of rows, and values over this size shown cut short
# (the whole value is one GET /api/sessions/{id}/plugin-data?plugin=&namespace=&key= away).
PANEL_PAGE_SIZE = 50
PANEL_VALUE_CHARS = 2000


def _plugin_data_panel(request: HttpRequest, session: Session) -> dict[str, Any]:
    try:
        offset = max(0, min(int(request.GET.get("data_offset", 0)), 1_000_000))
    except ValueError:
        offset = 0
    rows, count = play_selectors.plugin_data_page(
        session=session, limit=PANEL_PAGE_SIZE, offset=offset
    )
    for row in rows:
        text = json.dumps(row["value"], ensure_ascii=False, separators=(",", ":"))
        if len(text) > PANEL_VALUE_CHARS:
            # A plain string, so the template shows the cut text and never folds the whole value.
            row["value"] = text = f"{text[:PANEL_VALUE_CHARS]}… ({row['size']} bytes)"
        row["json"] = text
    before = max(0, offset - PANEL_PAGE_SIZE) if offset else None
    after = offset + PANEL_PAGE_SIZE if offset + PANEL_PAGE_SIZE < count else None
    return {
        "rows": rows,
        "count": count,
        "first": offset + 1 if rows else 0,
        "last": offset + len(rows),
        "previous": before,
        "next": after,
    }


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
    turns = play_selectors.turn_list(session=session)
    # A form's answer runs as a turn; the story shows it as the answer it is, not as a line
    # the player typed ("[Player input] ..."). One query for the page.
    answered = dict(
        Interaction.objects.filter(answer_turn__in=turns).values_list(
            "answer_turn_id", "form__title"
        )
    )
    for turn in turns:
        turn.answered_form = str(answered[turn.pk] or "a form") if turn.pk in answered else ""
    last_player = next((t for t in reversed(turns) if t.kind == "player"), None)
    context = {
        "session": session,
        "seats": _seat_rows(session),
        "world": session.world,
        "panels": panels,
        "slots": selectors.model_slots(),
        "outcomes": _outcome_rows(session),
        "turns": turns,
        "last_results": _runtime_states(session, turns[-1]) if turns else [],
        "plugin_data": _plugin_data_panel(request, session),
        "last_seq": last_event_seq(session=session),
        "forms": play_selectors.interaction_pending_list(session=session),
        "notifications": play_selectors.notice_recent_list(session=session),
        "ui_slots": session_slots(session=session),
        "package_ui": session_package_ui(
            session=session, turn_ids=[t.pk for t in turns], turns=turns
        ),
        "commands": session_command_list(session=session),
        "last_turn": last_player if last_player and last_player.status != "running" else None,
        # After a refused save the settings section opens on its banner.
        "settings_open": bool(posted),
    }
    return render(request, "sessions/session_detail.html", context, status=status)


@login_required
@require_http_methods(["GET", "HEAD"])
def session_forms(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """The pending forms alone: the play page fetches them when a turn asks something new."""
    session = Session.objects.select_related("owner").filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    if not play_selectors.session_can_access(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    forms = play_selectors.interaction_pending_list(session=session)
    return render(request, "sessions/_forms.html", {"forms": forms})


def _seat_rows(session: Session) -> list[dict[str, Any]]:
    """Each seat with its bound characters (by name) and the player characters it could add."""
    players = selectors.world_player_characters(world=session.world)
    names = {c["id"]: c["name"] for c in session.world.characters or []}
    taken = {cid for seat in session.seats or [] for cid in seat.get("characterIds") or []}
    return [
        {
            "id": seat.get("id"),
            "current": seat.get("currentCharacterId"),
            "bound": [
                {"id": cid, "name": names.get(cid, cid)} for cid in seat.get("characterIds") or []
            ],
            "addable": [c for c in players if c["id"] not in taken],
        }
        for seat in session.seats or []
    ]


@login_required
@require_http_methods(["POST"])
def session_seat(request: HttpRequest, session_id: uuid.UUID, seat_id: str) -> HttpResponse:
    """Switch a seat's current character (`current`) or bind one more to it (`add`)."""
    session = Session.objects.select_related("world", "owner").filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    if not play_selectors.session_can_access(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    seat = next((s for s in session.seats or [] if s.get("id") == seat_id), None)
    added = request.POST.get("add", "").strip()
    try:
        if seat is None:
            raise services.SessionProblem(f"no seat {seat_id!r}", code="not_found", status=404)
        if added:
            services.seat_update(
                session=session,
                seat_id=seat_id,
                character_ids=[*(seat.get("characterIds") or []), added],
            )
        else:
            services.seat_update(
                session=session,
                seat_id=seat_id,
                current_character_id=request.POST.get("current", "").strip(),
            )
    except services.SessionProblem as exc:
        return HttpResponse(
            exc.message, status=exc.status, content_type="text/plain; charset=utf-8"
        )
    return redirect(reverse("sessions:detail", args=[session.pk]))


def _rewind_view(request: HttpRequest, session_id: uuid.UUID, service: Any) -> HttpResponse:
    session = Session.objects.select_related("world", "owner").filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    if not play_selectors.session_can_access(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    try:
        service(session=session, turn_id=request.POST.get("turn", ""))
    except services.SessionProblem as exc:
        return HttpResponse(
            exc.message, status=exc.status, content_type="text/plain; charset=utf-8"
        )
    return redirect(reverse("sessions:detail", args=[session.pk]))


@login_required
@require_http_methods(["POST"])
def session_undo(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Undo the last turn (sessions/rewind.py): its story and its writes."""
    return _rewind_view(request, session_id, rewind.turn_undo)


@login_required
@require_http_methods(["POST"])
def session_regenerate(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Undo the last turn and play its message again."""
    return _rewind_view(request, session_id, rewind.turn_regenerate)


@login_required
@require_http_methods(["POST"])
def session_status(request: HttpRequest, session_id: uuid.UUID) -> HttpResponse:
    """Pause, resume or end a session from its page (the owner, or staff for support)."""
    session = Session.objects.select_related("world", "owner").filter(pk=session_id).first()
    if session is None:
        raise Http404("no such session")
    if not play_selectors.session_can_access(session=session, user=request.user):
        raise PermissionDenied("this session belongs to another player")
    try:
        services.session_set_status(session=session, status=request.POST.get("status", ""))
    except services.SessionProblem as exc:
        return HttpResponse(
            exc.message, status=exc.status, content_type="text/plain; charset=utf-8"
        )
    return redirect(reverse("sessions:detail", args=[session.pk]))
