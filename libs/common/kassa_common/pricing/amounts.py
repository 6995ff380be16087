"""Exact amount arithmetic for crypto payments: quoting a price in token units, and base units."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal, localcontext

from kassa_common import numbers

MAX_PLACES = 8  # quoted amounts never carry more than 8 decimal places


def crypto_amount(usd: Decimal, rate: Decimal, decimals: int) -> Decimal:
    """``usd / rate`` (an amount in any currency over the price of one token in it), rounded
    up to ``min(decimals, 8)`` places.

    Rounding up means a customer never underpays because of rounding.
    """
    if not usd.is_finite() or usd < 0:
        raise ValueError(f"amount must be a non-negative number, got {usd!r}")
    if not rate.is_finite() or rate <= 0:
        raise ValueError(f"rate must be a positive number, got {rate!r}")
    if decimals < 0:
        raise ValueError("decimals must not be negative")
    quantum = Decimal(f"1e-{min(decimals, MAX_PLACES)}")
    with localcontext() as ctx:
        # Rounding the quotient up as well keeps the final ceiling exact.
        ctx.prec = 60  # pragma: no mutate
        ctx.rounding = ROUND_CEILING
        return (usd / rate).quantize(quantum)


def to_base_units(amount: Decimal, decimals: int) -> int:
    """Exact integer amount in the token's smallest unit (wei, satoshi, ...).

    Raises ValueError if ``amount`` has more places than the token allows, or lies beyond
    the bound on every number (``kassa_common.numbers``: no ``10**1e9`` is ever computed).
    """
    if not amount.is_finite():
        raise ValueError(f"amount must be finite, got {amount!r}")
    numbers.check(amount)  # NumberOutOfBounds is a ValueError
    if not 0 <= decimals <= numbers.MAX_DIGITS:
        raise ValueError(f"decimals must be from 0 to {numbers.MAX_DIGITS}, got {decimals}")
    sign, digits, exponent = amount.as_tuple()
    coefficient = int("".join(map(str, digits)) or "0")
    assert isinstance(exponent, int)  # finite: no 'n', 'N' or 'F'
    shift = exponent + decimals
    if shift >= 0:  # pragma: no mutate
        units = coefficient * 10**shift
    else:
        units, rest = divmod(coefficient, 10**-shift)
        if rest:
            raise ValueError(f"{amount} has more than {decimals} decimal places")
    return -units if sign else units


def from_base_units(units: int, decimals: int) -> Decimal:
    """Exact Decimal for ``units`` smallest units, with exactly ``decimals`` places."""
    if decimals < 0:
        raise ValueError("decimals must not be negative")
    return Decimal((1 if units < 0 else 0, tuple(int(d) for d in str(abs(units))), -decimals))


def plain(value: Decimal) -> str:
    """A decimal as the API shows it: no exponent, no trailing zeros beyond the point. Exact:
    ``normalize`` rounds to the context's precision (28 digits by default; a stored rate has up
    to 36, an amount in base units up to 78)."""
    with localcontext() as ctx:
        ctx.prec = max(ctx.prec, len(value.as_tuple().digits))
        return format(value.normalize(), "f")


def units_text(units: int | Decimal, decimals: int) -> str:
    """Base units as a plain decimal amount of the token ("12.5" for 12500000 at 6 decimals)."""
    return plain(from_base_units(int(units), decimals))
