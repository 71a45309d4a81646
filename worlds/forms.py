"""Turning a settings panel's POSTed form into typed values.

HTML forms send strings; the fields want numbers, booleans and option values. Parsing here
only converts: the limits are checked by worlds.fields, the same rules the API applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from worlds.fields import FieldError, SettingField
from worlds.selectors import ORIGIN_UNSET, ResolvedField


def input_name(key: str) -> str:
    """The form field name of a setting (prefixed so no key collides with csrfmiddlewaretoken)."""
    return f"setting:{key}"


@dataclass
class PanelPost:
    """A parsed panel form: the values to save, parse errors, and what was typed (to redisplay)."""

    changes: dict[str, Any] = field(default_factory=dict)
    errors: list[FieldError] = field(default_factory=list)
    submitted: dict[str, str] = field(default_factory=dict)


def _parse(spec: SettingField, data: QueryDict) -> tuple[bool, Any, str, FieldError | None]:
    """(present, value, raw text, error) for one field."""
    name = input_name(spec.key)
    if spec.type == "toggle":
        # A hidden "false" precedes the checkbox, so the last value is the checkbox's state.
        raw_values = data.getlist(name)
        if not raw_values:
            return False, None, "", None
        raw = raw_values[-1]
        if raw not in ("true", "false"):
            return True, None, raw, FieldError(spec.key, "type", "must be on or off")
        return True, raw == "true", raw, None
    if name not in data:
        return False, None, "", None
    raw = data.get(name, "")
    if spec.is_numeric:
        text = raw.strip()
        if not text:
            return True, None, raw, FieldError(spec.key, "required", "enter a number")
        try:
            return True, int(text), raw, None
        except ValueError:
            pass
        try:
            return True, float(text), raw, None
        except ValueError:
            return (
                True,
                None,
                raw,
                FieldError(spec.key, "type", f"must be a number, not {text[:40]!r}"),
            )
    if spec.type == "textarea":
        # Browsers send CRLF line breaks; runtimes get plain "\n".
        return True, raw.replace("\r\n", "\n"), raw, None
    return True, raw, raw, None


def panel_post_parse(*, resolved: Sequence[ResolvedField], data: QueryDict) -> PanelPost:
    """Read the submitted controls of one panel.

    Only values that mean a change are kept: a key already set at this level is always saved
    (it may have been edited), and an inherited key is saved only when the form's value differs
    from the inherited one, so saving a panel never pins every default into the world file.
    """
    post = PanelPost()
    for item in resolved:
        spec = item.field
        present, value, raw, error = _parse(spec, data)
        if not present:
            continue
        post.submitted[spec.key] = raw
        if error:
            post.errors.append(error)
            continue
        if not item.set_here and item.origin == ORIGIN_UNSET and value == "":
            continue  # an empty control over a setting nobody set: still unset
        if item.set_here or value != item.value or type(value) is not type(item.value):
            if not item.set_here and _same_number(value, item.value):
                continue
            post.changes[spec.key] = value
    return post


def _same_number(a: Any, b: Any) -> bool:
    numeric = (int, float)
    return (
        isinstance(a, numeric)
        and isinstance(b, numeric)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )
