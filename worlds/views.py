"""World pages: the list with author cards, and a world's settings panels (its presets).

The panel helpers here are shared with the session page (sessions/views.py), which shows the
same panels one level up: the player's own values over the world's presets.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from catalogue.models import Package
from worlds import selectors
from worlds.fields import FieldError, SettingField, check_values
from worlds.forms import input_name, panel_post_parse
from worlds.models import World
from worlds.services import (
    SettingsInvalid,
    WorldFileConflict,
    WorldFileError,
    session_plugin_settings_update,
    world_plugin_settings_update,
    world_presets_reread,
)
from worlds.world_file import WORLD_FILE, read_world

if TYPE_CHECKING:
    from worlds.selectors import Session


@dataclass
class PanelRow:
    resolved: selectors.ResolvedField
    name: str
    input_value: str
    error: str = ""

    @property
    def field(self) -> SettingField:
        return self.resolved.field

    @property
    def min_attr(self) -> str:
        return _display(self.field.bounds[0]) if self.field.is_numeric else ""

    @property
    def max_attr(self) -> str:
        return _display(self.field.bounds[1]) if self.field.is_numeric else ""

    @property
    def step_attr(self) -> str:
        if self.field.step:
            return _display(self.field.step)
        return "1" if self.field.type == "integer" else "any"

    @property
    def reset_display(self) -> str:
        """The value a reset falls back to, as the player reads it."""
        r = self.resolved
        value = r.below_value
        if r.field.type == "select":
            return r.field.option_label(value) or _display(value)
        if r.field.type == "toggle":
            return "on" if value else "off"
        return _display(value)

    @property
    def checked(self) -> bool:
        if self.field.type != "toggle":
            return False
        return self.input_value == "true"


@dataclass
class Panel:
    package_id: str
    title: str
    package: Package | None
    level: str  # "world" or "session"
    can_edit: bool
    rows: list[PanelRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # problems not tied to one field
    # The world.yaml hash the page was rendered from: a save from a stale page is refused (409).
    file_hash: str = ""

    @property
    def anchor(self) -> str:
        return f"panel-{self.package_id}"

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or any(r.error for r in self.rows)

    @property
    def first_error_id(self) -> str:
        """The element a failed save scrolls to: the first refused field, else the panel."""
        return next((f"{self.anchor}-{r.field.key}" for r in self.rows if r.error), self.anchor)


def _display(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.12g}"
    return str(value)


CONFLICT = "conflict"


def world_file_hash(world: World) -> str:
    """sha256 of the world's world.yaml as it is on disk now ("" for a world without a folder)."""
    if not world.source_dir:
        return ""
    try:
        return hashlib.sha256((Path(world.source_dir) / WORLD_FILE).read_bytes()).hexdigest()
    except OSError:
        return ""


def panel_package_ids(*, world: World, session: Session | None) -> list[str]:
    """The world's plugins, then (on a session page) those the player added when it started."""
    ids = list(world.plugins or [])
    if session is not None:
        ids += [p for p in session.requested_plugins or [] if p not in ids]
    return ids


def build_panels(
    *,
    world: World,
    session: Session | None,
    can_edit: bool,
    posted: dict[str, tuple[dict[str, str], list[FieldError]]] | None = None,
    slots: list[str] | None = None,
) -> list[Panel]:
    """One panel per plugin the world uses, in the world's order, then the plugins the session
    added (three queries in all)."""
    posted = posted or {}
    package_ids = panel_package_ids(world=world, session=session)
    packages = selectors.packages_by_id(package_ids=package_ids)
    file_hash = world_file_hash(world) if session is None and can_edit else ""
    session_rows: dict[str, dict[str, Any]] = {}
    if session is not None:
        session_rows = {r.package_id: r.values for r in session.plugin_settings.all()}
    slots = selectors.model_slots() if slots is None else slots
    panels: list[Panel] = []
    for package_id in package_ids:
        package = packages.get(package_id)
        level = "session" if session is not None else "world"
        if package is None:
            panels.append(Panel(package_id, package_id, None, level, False))
            continue
        layers = []
        if session is not None:
            layers.append(
                selectors.Layer(selectors.ORIGIN_SESSION, session_rows.get(package_id, {}))
            )
        layers.append(
            selectors.Layer(
                selectors.ORIGIN_WORLD, selectors.world_values(world=world, package_id=package_id)
            )
        )
        resolved = selectors.resolve_fields(
            specs=selectors.package_settings_fields(package=package), layers=layers, slots=slots
        )
        submitted, errors = posted.get(package_id, ({}, []))
        errors_by_key = {e.key: e.message for e in errors}
        rows = [
            PanelRow(
                resolved=r,
                name=input_name(r.field.key),
                input_value=submitted.get(r.field.key, _display(r.value)),
                error=errors_by_key.get(r.field.key, ""),
            )
            for r in resolved
        ]
        title = package.display_name or package.manifest.get("displayName") or package_id
        panel = Panel(package_id, title, package, level, can_edit, rows, file_hash=file_hash)
        panel.errors = [e.message for e in errors if e.key not in {r.field.key for r in resolved}]
        panels.append(panel)
    return panels


def handle_panel_post(
    request: HttpRequest, *, world: World, session: Session | None, page_url: str
) -> tuple[HttpResponse | None, dict[str, tuple[dict[str, str], list[FieldError]]]]:
    """Save one panel's form (or reset one key); a redirect on success, else the errors to show."""
    package_id = request.POST.get("package", "")
    if package_id not in panel_package_ids(world=world, session=session):
        raise Http404("this world does not use that package")
    package = selectors.package_get_loaded(package_id=package_id)
    if package is None:
        raise Http404("that package is not loaded")
    layers = []
    if session is not None:
        layers.append(
            selectors.Layer(
                selectors.ORIGIN_SESSION,
                selectors.session_values(session=session, package_id=package_id),
            )
        )
    layers.append(
        selectors.Layer(
            selectors.ORIGIN_WORLD, selectors.world_values(world=world, package_id=package_id)
        )
    )
    resolved = selectors.resolve_fields(
        specs=selectors.package_settings_fields(package=package),
        layers=layers,
        slots=selectors.model_slots(),
    )
    reset_key = request.POST.get("reset")
    if reset_key is not None:
        changes: dict[str, Any] = {reset_key: None}
        post = None
    else:
        post = panel_post_parse(resolved=resolved, data=request.POST)
        checked = check_values(
            [r.field for r in resolved], post.changes, slots=selectors.model_slots()
        )
        errors = post.errors + checked.errors
        if errors:
            return None, {package_id: (post.submitted, errors)}
        changes = checked.values
    if session is None:
        conflict = _file_conflict(request, world=world, package_id=package_id, changes=changes)
        if conflict is not None:
            return None, {package_id: (post.submitted if post else {}, [conflict])}
    try:
        if session is not None:
            session_plugin_settings_update(
                session=session, package=package, values=changes, actor=request.user
            )
        else:
            world_plugin_settings_update(
                world=world, package=package, values=changes, actor=request.user
            )
    except SettingsInvalid as exc:
        return None, {package_id: (post.submitted if post else {}, exc.errors)}
    except WorldFileError as exc:
        code = CONFLICT if isinstance(exc, WorldFileConflict) else "file"
        return None, {
            package_id: (post.submitted if post else {}, [FieldError("", code, str(exc))])
        }
    title = package.display_name or package_id
    if reset_key is not None:
        messages.success(request, f"{title}: {reset_key} reset.")
    elif changes:
        messages.success(request, f"{title}: settings saved.")
    else:
        messages.info(request, f"{title}: nothing changed.")
    return HttpResponseRedirect(f"{page_url}#panel-{package_id}"), {}


def _file_conflict(
    request: HttpRequest, *, world: World, package_id: str, changes: dict[str, Any]
) -> FieldError | None:
    """A save from a page rendered before world.yaml changed on disk would silently revert that
    hand edit: refuse it, naming what the file says now next to what was submitted."""
    loaded_hash = request.POST.get("file_hash", "")
    current = world_file_hash(world)
    if not loaded_hash or not current or loaded_hash == current:
        return None
    on_disk = read_world(Path(world.source_dir)).data.get("pluginSettings", {}).get(package_id, {})
    world_presets_reread(world=world, package_id=package_id)
    pairs = [
        f"{key}: you entered {_display(value) or '(reset)'}, the file now says "
        f"{_display(on_disk[key]) if key in on_disk else '(not set)'}"
        for key, value in changes.items()
    ]
    return FieldError(
        "",
        CONFLICT,
        f"world.yaml changed on disk since this page was loaded, so nothing was saved. "
        f"{'; '.join(pairs)}. Reload the page to edit the current values.",
    )


@require_http_methods(["GET", "HEAD"])
def world_list(request: HttpRequest) -> HttpResponse:
    return render(request, "worlds/world_list.html", {"worlds": list(selectors.world_list())})


@require_http_methods(["GET", "HEAD", "POST"])
def world_detail(request: HttpRequest, world_id: str) -> HttpResponse:
    world = selectors.world_get(world_id=world_id)
    if world is None:
        raise Http404("no such world")
    can_edit = selectors.world_can_edit(world=world, user=request.user)
    posted: dict[str, tuple[dict[str, str], list[FieldError]]] = {}
    status = 200
    if request.method == "POST":
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_edit:
            raise PermissionDenied("only the world's owner or staff may edit its presets")
        response, posted = handle_panel_post(
            request, world=world, session=None, page_url=request.path
        )
        if response is not None:
            return response
        conflict = any(e.code == CONFLICT for _, errors in posted.values() for e in errors)
        status = 409 if conflict else 422
    slots = selectors.model_slots()
    panels = build_panels(world=world, session=None, can_edit=can_edit, posted=posted, slots=slots)
    context = {"world": world, "panels": panels, "can_edit": can_edit, "slots": slots}
    return render(request, "worlds/world_detail.html", context, status=status)
