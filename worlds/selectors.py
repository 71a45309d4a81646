"""Reads of worlds, settings panels and who may edit what."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.db.models import QuerySet

from catalogue.models import Package
from core.memo import per_scope
from worlds.fields import FieldError, SettingField, check_value, fields_from_manifest
from worlds.models import SessionPluginSettings, World

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class Session(Protocol):
    """A play session as worlds sees it: the lowest level of a package's settings.

    The model is sessions.models.Session; sessions sits above worlds (a session is played in a
    world), so worlds imports none of it and reaches its rows through its own relation,
    SessionPluginSettings.session.
    """

    pk: Any
    owner_id: Any
    world_id: Any
    world: World
    plugin_settings: Any  # SessionPluginSettings rows (the relation's reverse side)


def session_get(*, session_id: Any) -> Session | None:
    """A session by its id, with its world and owner, or None."""
    model = SessionPluginSettings._meta.get_field("session").related_model
    return model.objects.select_related("world", "owner").filter(pk=session_id).first()


# The model slots every Covel host knows. The Agent runtimes issue adds staff-configured slots;
# until then a deployment may name more in settings.COVEL_MODEL_SLOTS.
BUILTIN_MODEL_SLOTS = ("story", "plugin", "utility", "memory")

ORIGIN_SESSION = "session"
ORIGIN_WORLD = "world"
ORIGIN_DEFAULT = "default"
ORIGIN_UNSET = "unset"  # no level sets it and the manifest gives no default
ORIGIN_LABELS = {
    ORIGIN_SESSION: "your value",
    ORIGIN_WORLD: "world preset",
    ORIGIN_DEFAULT: "default",
    ORIGIN_UNSET: "not set",
}


def model_slots() -> list[str]:
    """The model slot names a `slot` setting may take, built-ins first, without duplicates."""
    from agents.selectors import slot_names  # staff-configured slots count too

    extra = getattr(settings, "COVEL_MODEL_SLOTS", None) or ()
    names: list[str] = []
    for name in (*BUILTIN_MODEL_SLOTS, *extra, *slot_names()):
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def world_list() -> QuerySet[World]:
    return World.objects.select_related("owner").order_by("world_id")


def world_get(*, world_id: str) -> World | None:
    return World.objects.select_related("owner").filter(world_id=world_id).first()


def world_player_characters(*, world: World) -> list[dict[str, Any]]:
    """The world's characters of type player, in file order (the first is a new seat's default)."""
    return [c for c in world.characters or [] if c.get("type") == "player"]


def package_get_loaded(*, package_id: str) -> Package | None:
    return Package.objects.loaded().filter(package_id=package_id).first()


def packages_by_id(*, package_ids: Iterable[str]) -> dict[str, Package]:
    """Loaded packages among the IDs, in one query."""
    return {
        p.package_id: p for p in Package.objects.loaded().filter(package_id__in=list(package_ids))
    }


def package_settings_fields(*, package: Package) -> list[SettingField]:
    return fields_from_manifest(package.manifest)


def world_can_edit(*, world: World, user: AbstractBaseUser | AnonymousUser) -> bool:
    """The world's owner may edit its presets; staff may edit any world's."""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff) or (world.owner_id is not None and world.owner_id == user.pk)


def session_can_edit(*, session: Session, user: AbstractBaseUser | AnonymousUser) -> bool:
    """A session's settings are its player's (the owner); staff may edit them too, for support."""
    if not user.is_authenticated:
        return False
    return bool(user.is_staff) or session.owner_id == user.pk


def session_values(*, session: Session, package_id: str) -> dict[str, Any]:
    return dict(_session_settings(session.pk).get(package_id) or {})


@per_scope
def _session_settings(session_id: Any) -> dict[str, Any]:
    """A session's values of every package: once per turn (core.memo), which reads the
    settings of each package that declares some."""
    return dict(
        SessionPluginSettings.objects.filter(session_id=session_id).values_list(
            "package_id", "values"
        )
    )


def world_values(*, world: World | None, package_id: str) -> dict[str, Any]:
    if world is None:
        return {}
    values = (world.plugin_settings or {}).get(package_id) or {}
    return dict(values) if isinstance(values, Mapping) else {}


@dataclass(frozen=True)
class Layer:
    """One level of the precedence: its origin name and the values it sets."""

    origin: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class ResolvedField:
    """One control of a panel with its effective value and where that value comes from."""

    field: SettingField
    value: Any
    origin: str
    # The value and origin the key falls back to when the panel's own level is reset.
    below_value: Any
    below_origin: str
    # The panel's own level sets this key (so a reset button applies).
    set_here: bool
    # Values stored at some level that no longer fit the field (the manifest changed): ignored.
    ignored: tuple[FieldError, ...] = ()

    @property
    def origin_label(self) -> str:
        return ORIGIN_LABELS[self.origin]

    @property
    def below_label(self) -> str:
        return ORIGIN_LABELS[self.below_origin]

    @property
    def value_label(self) -> str:
        """What the player sees for the value: a select's label rather than its stored value."""
        if self.field.type == "select":
            return self.field.option_label(self.value) or (
                "" if self.value is None else str(self.value)
            )
        if self.value is None:
            return ""
        if self.field.type == "toggle":
            return "on" if self.value else "off"
        return str(self.value)

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.field.as_dict(),
            "value": self.value,
            "origin": self.origin,
            "reset_value": self.below_value,
            "reset_origin": self.below_origin,
            "set_here": self.set_here,
            "ignored": [{"key": e.key, "msg": e.message, "type": e.code} for e in self.ignored],
        }


def resolve_fields(
    *, specs: Sequence[SettingField], layers: Sequence[Layer], slots: Sequence[str]
) -> list[ResolvedField]:
    """Walk the layers top-down (session, then world) and fall back to the manifest default.

    A stored value that no longer passes its field's validation is skipped, so a manifest that
    narrowed a range or dropped an option never hands a runtime a value it cannot take.
    """
    resolved: list[ResolvedField] = []
    for spec in specs:
        found: list[tuple[str, Any]] = []
        ignored: list[FieldError] = []
        for layer in layers:
            if spec.key not in layer.values:
                continue
            clean, error = check_value(spec, layer.values[spec.key], slots=slots)
            if error:
                ignored.append(
                    FieldError(
                        spec.key, error.code, f"{ORIGIN_LABELS[layer.origin]} {error.message}"
                    )
                )
            else:
                found.append((layer.origin, clean))
        if spec.has_default:
            found.append((ORIGIN_DEFAULT, spec.default))
        else:
            found.append((ORIGIN_UNSET, None))
        own = layers[0].origin if layers else None
        origin, value = found[0]
        set_here = own is not None and origin == own
        # The default (or "unset") entry is always last, so a level set here has one below it.
        below_origin, below_value = found[1] if set_here else found[0]
        resolved.append(
            ResolvedField(
                field=spec,
                value=value,
                origin=origin,
                below_value=below_value,
                below_origin=below_origin,
                set_here=set_here,
                ignored=tuple(ignored),
            )
        )
    return resolved


def settings_resolve(
    *, package: Package, world: World | None, session: Session | None
) -> list[ResolvedField]:
    """A package's panel at the top given level: the session's when a session is given."""
    return settings_resolve_fields(
        package_id=package.package_id,
        fields=package_settings_fields(package=package),
        world=world,
        session=session,
    )


def settings_resolve_fields(
    *,
    package_id: str,
    fields: list[SettingField],
    world: World | None,
    session: Session | None,
) -> list[ResolvedField]:
    """settings_resolve over the package's fields as given (a turn's loaded manifest)."""
    layers: list[Layer] = []
    if session is not None:
        layers.append(Layer(ORIGIN_SESSION, session_values(session=session, package_id=package_id)))
    if world is not None:
        layers.append(Layer(ORIGIN_WORLD, world_values(world=world, package_id=package_id)))
    return resolve_fields(specs=fields, layers=layers, slots=model_slots())
