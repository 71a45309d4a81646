"""Settings fields of a package (its `contributes.settings`) and the validation of their values.

Plain Python, no database: the services, the API, the HTML forms, the world-file sync and the
tests share it. A value is checked against the field it is meant for; every problem becomes a
FieldError naming the key, so a caller can report all bad fields at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

CONTROL_TYPES = ("text", "textarea", "number", "integer", "toggle", "select", "slider", "slot")

# A `text` setting is one line (a name, a city); a `textarea` is a paragraph or a short list.
# Both end up in prompts and in ctx.userSettings, so both are bounded.
TEXT_MAX_CHARS = 500
TEXTAREA_MAX_CHARS = 10_000
# Runtimes are JavaScript: an integer beyond 2**53 - 1 would silently lose digits there.
MAX_SAFE_INTEGER = 2**53 - 1
# A slider with no written bounds behaves like the HTML range input it renders as.
SLIDER_DEFAULT_MIN = 0
SLIDER_DEFAULT_MAX = 100
# How far from the step grid a float may be and still count as on it (binary fractions:
# 0.1 * 3 is 0.30000000000000004).
STEP_TOLERANCE = 1e-9

_TEXT_CONTROL_CHARS = {chr(c) for c in range(32)} | {"\x7f"}


@dataclass(frozen=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True)
class SettingField:
    """One control of a package's settings panel, read from `contributes.settings[]`."""

    key: str
    type: str
    label: str
    description: str = ""
    default: Any = None
    has_default: bool = False
    min: float | None = None
    max: float | None = None
    step: float | None = None
    options: tuple[Option, ...] = ()

    @property
    def is_numeric(self) -> bool:
        return self.type in ("number", "integer", "slider")

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """The effective min and max (a slider falls back to 0..100)."""
        if self.type == "slider":
            low = SLIDER_DEFAULT_MIN if self.min is None else self.min
            high = SLIDER_DEFAULT_MAX if self.max is None else self.max
            return low, high
        return self.min, self.max

    @property
    def max_chars(self) -> int | None:
        if self.type == "text":
            return TEXT_MAX_CHARS
        if self.type == "textarea":
            return TEXTAREA_MAX_CHARS
        return None

    def option_label(self, value: Any) -> str | None:
        for option in self.options:
            if option.value == value:
                return option.label
        return None

    def as_dict(self) -> dict[str, Any]:
        low, high = self.bounds if self.is_numeric else (None, None)
        return {
            "key": self.key,
            "type": self.type,
            "label": self.label,
            "description": self.description,
            "default": self.default if self.has_default else None,
            "has_default": self.has_default,
            "min": low,
            "max": high,
            "step": self.step,
            "options": [{"value": o.value, "label": o.label} for o in self.options],
            "max_chars": self.max_chars,
        }


@dataclass(frozen=True)
class FieldError:
    key: str
    code: str
    message: str

    def as_detail(self, *, prefix: tuple[str, ...] = ("body",)) -> dict[str, Any]:
        """The 422 entry: {"loc": [...], "msg": ..., "type": ...}."""
        return {"loc": [*prefix, self.key], "msg": self.message, "type": self.code}


@dataclass
class Checked:
    """The outcome of checking a {key: value} mapping: the clean values and every error."""

    values: dict[str, Any] = field(default_factory=dict)
    errors: list[FieldError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _number_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def fields_from_manifest(manifest: Mapping[str, Any] | None) -> list[SettingField]:
    """The settings panel of a package, in manifest order.

    The loader has already validated the manifest; entries it would refuse (no key, unknown
    type) are skipped here rather than crashing a page.
    """
    contributes = (manifest or {}).get("contributes") or {}
    raw = contributes.get("settings") or []
    result: list[SettingField] = []
    seen: set[str] = set()
    for entry in raw if isinstance(raw, list | tuple) else []:
        if not isinstance(entry, Mapping):
            continue
        key, kind = entry.get("key"), entry.get("type")
        if not isinstance(key, str) or not key or kind not in CONTROL_TYPES or key in seen:
            continue
        seen.add(key)
        options = tuple(
            Option(value=str(o.get("value")), label=str(o.get("label") or o.get("value")))
            for o in entry.get("options") or []
            if isinstance(o, Mapping) and o.get("value") is not None
        )
        step = _number_or_none(entry.get("step"))
        result.append(
            SettingField(
                key=key,
                type=kind,
                label=str(entry.get("label") or key),
                description=str(entry.get("description") or ""),
                default=entry.get("default"),
                has_default="default" in entry,
                min=_number_or_none(entry.get("min")),
                max=_number_or_none(entry.get("max")),
                step=step if step and step > 0 else None,
                options=options,
            )
        )
    return result


def _fmt(number: float) -> str:
    return f"{number:g}" if isinstance(number, float) else str(number)


def _check_numeric(spec: SettingField, value: Any) -> tuple[Any, FieldError | None]:
    def bad(code: str, message: str) -> tuple[Any, FieldError]:
        return None, FieldError(spec.key, code, message)

    # bool is an int in Python; a toggle's true is never the number 1.
    if isinstance(value, bool) or not isinstance(value, int | float):
        noun = "a whole number" if spec.type == "integer" else "a number"
        return bad("type", f"must be {noun}, not {type_name(value)}")
    if not math.isfinite(value):
        return bad("not-finite", "must be a finite number")
    if spec.type == "integer":
        if isinstance(value, float):
            if not value.is_integer():
                return bad("not-integer", f"must be a whole number, not {_fmt(value)}")
            value = int(value)
        if abs(value) > MAX_SAFE_INTEGER:
            return bad(
                "out-of-range", f"must be between -{MAX_SAFE_INTEGER} and {MAX_SAFE_INTEGER}"
            )
    low, high = spec.bounds
    if low is not None and value < low:
        return bad("below-min", f"must be at least {_fmt(low)}, not {_fmt(value)}")
    if high is not None and value > high:
        return bad("above-max", f"must be at most {_fmt(high)}, not {_fmt(value)}")
    if spec.step:
        base = low if low is not None else 0
        steps = (value - base) / spec.step
        nearest = round(steps)
        if abs(steps - nearest) > STEP_TOLERANCE * max(1.0, abs(steps)):
            start = f" from {_fmt(base)}" if base else ""
            return bad(
                "off-step",
                f"must be on the step grid of {_fmt(spec.step)}{start}; {_fmt(value)} is not",
            )
        if isinstance(value, float):
            # Snap away binary noise (0.30000000000000004 is stored as 0.3).
            value = float(f"{base + nearest * spec.step:.12g}")
    return value, None


def _check_text(spec: SettingField, value: Any) -> tuple[Any, FieldError | None]:
    if not isinstance(value, str):
        return None, FieldError(spec.key, "type", f"must be a string, not {type_name(value)}")
    limit = spec.max_chars or TEXT_MAX_CHARS
    if len(value) > limit:
        return None, FieldError(
            spec.key, "too-long", f"must be at most {limit} characters, not {len(value)}"
        )
    allowed = {"\n", "\t"} if spec.type == "textarea" else set()
    if any(ch in _TEXT_CONTROL_CHARS and ch not in allowed for ch in value):
        what = (
            "control characters" if spec.type == "textarea" else "line breaks or control characters"
        )
        return None, FieldError(spec.key, "control-chars", f"must not contain {what}")
    return value, None


def check_value(
    spec: SettingField, value: Any, *, slots: Iterable[str]
) -> tuple[Any, FieldError | None]:
    """Validate one value for its field; return the normalised value or the error."""
    if spec.is_numeric:
        return _check_numeric(spec, value)
    if spec.type in ("text", "textarea"):
        return _check_text(spec, value)
    if spec.type == "toggle":
        if not isinstance(value, bool):
            return None, FieldError(
                spec.key, "type", f"must be true or false, not {type_name(value)}"
            )
        return value, None
    if spec.type == "select":
        allowed = [o.value for o in spec.options]
        if not isinstance(value, str) or value not in allowed:
            return None, FieldError(
                spec.key,
                "not-an-option",
                f"must be one of {', '.join(allowed)}; got {short_repr(value)}",
            )
        return value, None
    if spec.type == "slot":
        names = list(slots)
        if not isinstance(value, str) or value not in names:
            return None, FieldError(
                spec.key,
                "unknown-slot",
                f"must be a model slot ({', '.join(names)}); got {short_repr(value)}",
            )
        return value, None
    return None, FieldError(spec.key, "unknown-type", f"has an unknown control type {spec.type!r}")


def check_values(
    specs: Iterable[SettingField],
    values: Mapping[str, Any],
    *,
    slots: Iterable[str],
    allow_null: bool = False,
) -> Checked:
    """Validate a {key: value} mapping against a panel; every bad key is reported.

    allow_null: a None value passes through (the caller reads it as "reset this key").
    """
    by_key = {spec.key: spec for spec in specs}
    slot_names = list(slots)
    checked = Checked()
    for key, value in values.items():
        spec = by_key.get(key)
        if spec is None:
            known = ", ".join(by_key) or "none"
            checked.errors.append(
                FieldError(
                    str(key), "unknown-key", f"is not a setting of this package (known: {known})"
                )
            )
            continue
        if value is None and allow_null:
            checked.values[key] = None
            continue
        clean, error = check_value(spec, value, slots=slot_names)
        if error:
            checked.errors.append(error)
        else:
            checked.values[key] = clean
    return checked


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def short_repr(value: Any, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= limit else text[: limit - 1] + "…"
