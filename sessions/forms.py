"""Forms the player answers: the built-in checks of submitted values, and the follow-up line.

Plain functions over a form as its runtime wrote it ({title, fields, ...}; the shape is
agents.tools.form_schema). A field's checks come from its own definition: required, the type,
min / max / step, the options. A package's own rules run after these, in its validator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

# The player-message limit of the actions API: a text answer is a player's words too.
PLAYER_MESSAGE_MAX_LENGTH = 20000
BOOLEAN_TYPES = ("checkbox", "toggle")
NUMBER_TYPES = ("number", "integer")
# Float steps (0.1, 0.25) never divide exactly; this much slack still refuses a real miss.
STEP_TOLERANCE = 1e-9


def form_normalise(form: Mapping[str, Any]) -> dict[str, Any]:
    """The form as it is stored and shown: each select option as {"value", "label"}."""
    fields = []
    for item in form.get("fields") or ():
        item = dict(item)
        if "options" in item:
            item["options"] = [
                {"value": o, "label": o} if isinstance(o, str) else dict(o) for o in item["options"]
            ]
        fields.append(item)
    return {**form, "fields": fields}


def _issue(field: str | None, message: str) -> dict[str, Any]:
    return {"field": field, "message": message}


def _empty(value: Any) -> bool:
    return value is None or value == ""


def _number(value: Any) -> float | None:
    """The value as a finite number, or None (JSON's true is not 1 here, and NaN is no number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _check_number(item: Mapping[str, Any], value: Any) -> str | None:
    number = _number(value)
    if number is None:
        return "Enter a number."
    if item.get("type") == "integer" and not number.is_integer():
        return "Enter a whole number."
    if "min" in item and number < item["min"]:
        return f"Enter at least {_plain(item['min'])}."
    if "max" in item and number > item["max"]:
        return f"Enter at most {_plain(item['max'])}."
    step = item.get("step")
    if step:
        steps = (number - float(item.get("min", 0))) / float(step)
        if abs(steps - round(steps)) > STEP_TOLERANCE * max(1.0, abs(steps)):
            return f"Enter a value in steps of {_plain(step)}."
    return None


def _check(item: Mapping[str, Any], value: Any) -> str | None:
    kind = item.get("type") or "text"
    if kind in BOOLEAN_TYPES:
        if value is None and item.get("required"):
            return "This field is required."
        if not isinstance(value, bool):
            return "Answer yes or no."
        # A required checkbox is one the player must tick, as in HTML.
        if item.get("required") and value is False:
            return "This field is required."
        return None
    if _empty(value):
        return "This field is required." if item.get("required") else None
    if kind in NUMBER_TYPES:
        return _check_number(item, value)
    if kind == "select":
        allowed = [
            o if isinstance(o, str) else str(o.get("value")) for o in item.get("options") or ()
        ]
        if value not in allowed:
            return "Choose one of the options."
        return None
    if not isinstance(value, str):
        return "Enter text."
    if len(value) > PLAYER_MESSAGE_MAX_LENGTH:
        return f"Enter at most {PLAYER_MESSAGE_MAX_LENGTH} characters."
    return None


def form_check_values(
    form: Mapping[str, Any], values: Mapping[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the values to store, issues): every issue at once, [] when the values are fine.

    An issue is {"field": name or None, "message": text}. A name that is not a field of the
    form is refused rather than stored. The stored values keep the form's field order and leave
    out optional fields left empty; an integer is stored as one.
    """
    fields = list(form.get("fields") or ())
    known = {str(item.get("name")) for item in fields}
    issues = [
        _issue(name, f"{name} is not a field of this form.") for name in values if name not in known
    ]
    kept: dict[str, Any] = {}
    for item in fields:
        name = str(item.get("name"))
        value = values.get(name)
        if item.get("type") in BOOLEAN_TYPES and value is None and not item.get("required"):
            value = False  # an unticked optional box
        problem = _check(item, value)
        if problem:
            issues.append(_issue(name, problem))
        elif not _empty(value):
            kept[name] = int(value) if item.get("type") == "integer" else value
    return kept, issues


def _plain(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return json.dumps(value)
    return str(value)


def form_player_line(form: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """The follow-up turn's player message: "[Player input] <title>: <label>: <value>; ..."."""
    parts = []
    for item in form.get("fields") or ():
        name = str(item.get("name"))
        if name in values:
            parts.append(f"{item.get('label') or name}: {_plain(values[name])}")
    return f"[Player input] {form.get('title') or 'Form'}: {'; '.join(parts)}"
