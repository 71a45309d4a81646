"""Each control type's validation: both sides of every boundary, the step grid, wrong types."""

from __future__ import annotations

import math
from typing import Any

import pytest
from worlds_testdata import AFFINITY_SETTINGS, DICE_SETTINGS

from worlds.fields import (
    MAX_SAFE_INTEGER,
    TEXT_MAX_CHARS,
    TEXTAREA_MAX_CHARS,
    check_value,
    check_values,
    fields_from_manifest,
)

SLOTS = ["story", "plugin", "utility", "memory"]
FIELDS = {
    f.key: f
    for f in fields_from_manifest({"contributes": {"settings": AFFINITY_SETTINGS + DICE_SETTINGS}})
}


def check(key: str, value: Any) -> tuple[Any, str | None]:
    clean, error = check_value(FIELDS[key], value, slots=SLOTS)
    return clean, error.code if error else None


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (0, None),
        (10, None),
        (5, None),
        (-1, "below-min"),
        (11, "above-max"),
        (10.5, "above-max"),
        (-0.5, "below-min"),
        (4.5, "off-step"),
        (True, "type"),
        ("5", "type"),
        (None, "type"),
        (math.nan, "not-finite"),
        (math.inf, "not-finite"),
        (5.0, None),
    ],
)
def test_slider_bounds_step_and_types(value: Any, code: str | None) -> None:
    assert check("intensity", value)[1] == code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (0, None),
        (1, None),
        (0.05, None),
        (0.3, None),
        (0.95, None),
        (-0.05, "below-min"),
        (1.05, "above-max"),
        (0.07, "off-step"),
        (0.051, "off-step"),
        (False, "type"),
        ([0.1], "type"),
        (-math.inf, "not-finite"),
    ],
)
def test_number_bounds_step_and_types(value: Any, code: str | None) -> None:
    assert check("decay", value)[1] == code


def test_number_on_the_grid_within_float_tolerance_is_snapped() -> None:
    # 0.1 * 3 is 0.30000000000000004 in binary floating point: on the grid, stored as 0.3.
    clean, code = check("decay", 0.1 * 3)
    assert code is None and clean == 0.3


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (1, None),
        (100, None),
        (0, "below-min"),
        (101, "above-max"),
        (20.0, None),
        (20.5, "not-integer"),
        (True, "type"),
        ("20", "type"),
        (math.nan, "not-finite"),
    ],
)
def test_integer_bounds_wholeness_and_types(value: Any, code: str | None) -> None:
    assert check("max-entries", value)[1] == code


def test_integer_whole_float_is_stored_as_an_int() -> None:
    clean, _ = check("max-entries", 20.0)
    assert clean == 20 and isinstance(clean, int)


def test_integer_beyond_javascript_safe_range_is_refused() -> None:
    spec = fields_from_manifest(
        {"contributes": {"settings": [{"key": "n", "type": "integer", "label": "N"}]}}
    )[0]
    assert check_value(spec, MAX_SAFE_INTEGER, slots=SLOTS)[1] is None
    assert check_value(spec, MAX_SAFE_INTEGER + 1, slots=SLOTS)[1].code == "out-of-range"


def test_integer_step_grid_starts_at_min() -> None:
    spec = fields_from_manifest(
        {
            "contributes": {
                "settings": [
                    {"key": "n", "type": "integer", "label": "N", "min": 1, "max": 9, "step": 2}
                ]
            }
        }
    )[0]
    assert check_value(spec, 3, slots=SLOTS)[1] is None
    error = check_value(spec, 4, slots=SLOTS)[1]
    assert error.code == "off-step" and "step grid of 2 from 1" in error.message


@pytest.mark.parametrize(
    ("value", "code"), [(True, None), (False, None), (1, "type"), ("true", "type"), (None, "type")]
)
def test_toggle_takes_only_booleans(value: Any, code: str | None) -> None:
    assert check("show-panel", value)[1] == code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("gentle", None),
        ("harsh", None),
        ("Harsh", "not-an-option"),
        ("Gentle", "not-an-option"),
        ("", "not-an-option"),
        (1, "not-an-option"),
        (None, "not-an-option"),
    ],
)
def test_select_takes_one_of_its_option_values(value: Any, code: str | None) -> None:
    assert check("tone", value)[1] == code


def test_select_error_lists_the_options() -> None:
    error = check_value(FIELDS["tone"], "furious", slots=SLOTS)[1]
    assert "gentle, neutral, harsh" in error.message


@pytest.mark.parametrize(
    ("value", "code"),
    [("story", None), ("memory", None), ("gpt-4", "unknown-slot"), (3, "unknown-slot")],
)
def test_slot_takes_an_existing_slot(value: Any, code: str | None) -> None:
    assert check("model", value)[1] == code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("", None),
        ("x" * TEXT_MAX_CHARS, None),
        ("x" * (TEXT_MAX_CHARS + 1), "too-long"),
        ("two\nlines", "control-chars"),
        ("nul\x00", "control-chars"),
        (5, "type"),
        (None, "type"),
    ],
)
def test_text_is_one_bounded_line(value: Any, code: str | None) -> None:
    assert check("nickname", value)[1] == code


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("line one\nline two\ttab", None),
        ("x" * TEXTAREA_MAX_CHARS, None),
        ("x" * (TEXTAREA_MAX_CHARS + 1), "too-long"),
        ("bell\x07", "control-chars"),
        (["a"], "type"),
    ],
)
def test_textarea_is_bounded_and_multiline(value: Any, code: str | None) -> None:
    assert check("notes", value)[1] == code


def test_every_bad_key_is_reported_and_unknown_keys_are_refused() -> None:
    checked = check_values(
        FIELDS.values(),
        {"intensity": 11, "tone": "harsh", "colour": "red", "show-panel": "yes", "sides": 1},
        slots=SLOTS,
    )
    assert sorted((e.key, e.code) for e in checked.errors) == [
        ("colour", "unknown-key"),
        ("intensity", "above-max"),
        ("show-panel", "type"),
        ("sides", "below-min"),
    ]
    assert checked.values == {"tone": "harsh"}


def test_slider_without_bounds_uses_zero_to_hundred() -> None:
    spec = fields_from_manifest(
        {"contributes": {"settings": [{"key": "s", "type": "slider", "label": "S"}]}}
    )[0]
    assert spec.bounds == (0, 100)
    assert check_value(spec, 100, slots=SLOTS)[1] is None
    assert check_value(spec, 101, slots=SLOTS)[1].code == "above-max"
    assert check_value(spec, -1, slots=SLOTS)[1].code == "below-min"


@pytest.mark.django_db
def test_model_slots_include_configured_ones(settings) -> None:
    from agents.models import ModelSlot
    from worlds.selectors import model_slots

    assert model_slots() == ["story", "plugin", "utility", "memory"]
    settings.COVEL_MODEL_SLOTS = ["vision", "story"]
    assert model_slots() == ["story", "plugin", "utility", "memory", "vision"]
    # Slots staff configured in the admin are offered too.
    ModelSlot.objects.create(name="summaries", base_url="https://m.example/v1", model="m")
    assert model_slots()[-1] == "summaries"
