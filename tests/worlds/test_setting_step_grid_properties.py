"""Property tests of the step grid: every grid point passes, every half-step between fails."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worlds.fields import check_value, fields_from_manifest

SLOTS = ["story"]
steps = st.sampled_from([0.05, 0.1, 0.25, 1, 2, 5, 0.001])
starts = st.sampled_from([0, -1, 0.5, 3, -10])


def spec(kind: str, low: float, step: float, count: int):
    entry = {
        "key": "v",
        "type": kind,
        "label": "V",
        "min": low,
        "max": low + step * count,
        "step": step,
    }
    return fields_from_manifest({"contributes": {"settings": [entry]}})[0]


@given(low=starts, step=steps, count=st.integers(1, 400), k=st.integers(0, 400))
def test_every_grid_point_within_bounds_passes(low: float, step: float, count: int, k: int) -> None:
    field = spec("number", low, step, count)
    k = min(k, count)
    value = low + k * step
    clean, error = check_value(field, value, slots=SLOTS)
    assert error is None, (value, error)
    assert abs(clean - value) < 1e-9 * max(1, abs(value))


@given(low=starts, step=steps, count=st.integers(2, 400), k=st.integers(0, 398))
def test_half_a_step_off_the_grid_fails(low: float, step: float, count: int, k: int) -> None:
    field = spec("slider", low, step, count)
    k = min(k, count - 1)
    _, error = check_value(field, low + (k + 0.5) * step, slots=SLOTS)
    assert error is not None and error.code == "off-step"


@given(low=starts, step=steps, count=st.integers(1, 100))
def test_just_outside_the_bounds_fails(low: float, step: float, count: int) -> None:
    field = spec("number", low, step, count)
    assert check_value(field, low - step, slots=SLOTS)[1].code == "below-min"
    assert check_value(field, low + step * (count + 1), slots=SLOTS)[1].code == "above-max"
