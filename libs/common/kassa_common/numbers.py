"""The bound on every number Kassa takes in (DESIGN §10), checked before any arithmetic.

A number has at most ``MAX_DIGITS`` significant digits (a uint256 has 78) and its
exponent, as scientific notation writes it (``1.5e30``), lies within ±``MAX_EXPONENT``.
Anything else is refused as it arrives: ``1e999999999`` is cheap to read as a Decimal but
``10**1e9`` (what turning it into base units, or an integer, computes) freezes a worker.
The JSON parser of the API (``kassa_api.endpoint``) applies the rule to every JSON number,
the field types (``kassa_common.fields``, the refund amount) to decimal strings and form
values, and ``pricing.amounts.to_base_units`` guards itself with it too.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

MAX_DIGITS = 78
MAX_EXPONENT = 30
MESSAGE = f"numbers have at most {MAX_DIGITS} significant digits and an exponent within ±{MAX_EXPONENT}"


class NumberOutOfBounds(ValueError):
    """A number beyond the bound (pydantic reports a ValueError as the field's error)."""

    def __init__(self) -> None:
        super().__init__(MESSAGE)


def within(value: Decimal | int) -> bool:
    """Whether a finite ``value`` lies within the bound (an int is counted without being
    turned into text, so no integer-to-string limit is ever reached)."""
    if isinstance(value, int):
        return -(10 ** (MAX_EXPONENT + 1)) < value < 10 ** (MAX_EXPONENT + 1)
    if not value.is_finite():
        return False
    return len(value.as_tuple().digits) <= MAX_DIGITS and -MAX_EXPONENT <= value.adjusted() <= MAX_EXPONENT


def check(value: Decimal | float) -> Decimal:
    """``value`` as the exact Decimal it is (a float as its shortest text), or
    NumberOutOfBounds (an infinite or NaN float too)."""
    if isinstance(value, float):
        value = Decimal(repr(value))  # "inf" and "nan" read as such: not within
    if not within(value):
        raise NumberOutOfBounds
    return Decimal(value)


def parse(text: str) -> Decimal:
    """The Decimal ``text`` spells exactly, within the bound; else NumberOutOfBounds (an
    exponent too large for Decimal itself included). Text that is no number at all is an
    ``InvalidOperation`` for the caller to word."""
    try:
        value = Decimal(text)
    except InvalidOperation:
        if "e" in text.lower() and text.lower().split("e", 1)[1].lstrip("+-").isdigit():
            raise NumberOutOfBounds from None  # a number, but its exponent overflows Decimal
        raise
    return check(value)
