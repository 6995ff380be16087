"""The bound on every number (kassa_common.numbers, DESIGN §10), and the base-unit
conversion guarding itself with it: beyond the bound is refused before any arithmetic."""

from __future__ import annotations

import time
from decimal import Decimal, InvalidOperation

import pytest

from kassa_common import numbers
from kassa_common.pricing.amounts import to_base_units

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "text",
    [
        "0",
        "-0",
        "0.000",
        "1e30",
        "-9.9e30",
        "1e-30",
        "1.5e-29",
        "9" * 31,
        "0." + "0" * 29 + "1" * 48,
        "1" * 31 + "." + "1" * 47,
    ],
)
def test_within_the_bound(text):
    assert numbers.parse(text) == Decimal(text)


@pytest.mark.parametrize(
    "text",
    [
        "1e31",
        "1e-31",
        "0e-31",
        "9" * 32,
        "1." + "0" * 78,
        "1e999999999",
        "1e-999999999",
        "1e99999999999999999999",
        "7" * 4301,
    ],
)
def test_beyond_the_bound(text):
    with pytest.raises(numbers.NumberOutOfBounds, match="78 significant digits"):
        numbers.parse(text)


def test_text_that_is_no_number_is_not_called_out_of_bounds():
    with pytest.raises(InvalidOperation):
        numbers.parse("abc")


@pytest.mark.parametrize(
    "value", [10**31, -(10**31), 10**5000, float("inf"), float("nan")], ids=["1e31", "-1e31", "1e5000", "inf", "nan"]
)
def test_ints_and_floats_are_bounded_without_building_their_text(value):
    with pytest.raises(numbers.NumberOutOfBounds):
        numbers.check(value)


@pytest.mark.parametrize("amount", ["1e999999999", "1e-999999999", "1e31"])
def test_to_base_units_refuses_beyond_the_bound_at_once(amount):
    started = time.monotonic()
    with pytest.raises(ValueError, match="78 significant digits"):
        to_base_units(Decimal(amount), 18)
    assert time.monotonic() - started < 5  # before the guard: 10**1e9, minutes of CPU


def test_to_base_units_within_the_bound_is_exact():
    assert to_base_units(Decimal("1e30"), 18) == 10**48
    assert to_base_units(Decimal("2.5"), 6) == 2_500_000
