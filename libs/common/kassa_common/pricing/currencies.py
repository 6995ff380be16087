"""Currencies a price may be given in (ISO 4217) and their minor units.

``amount`` and a FIAT product's ``price`` are in the merchant's currency and may carry at
most that currency's minor units: 2 places for USD, EUR and GBP, none for JPY (``10.5`` JPY
is refused). A code must be an ISO 4217 currency; whether a rate for it can be had is the
rate service's question (``service.RateService``). Currencies with three minor units (BHD,
KWD, …) are not accepted: amounts are stored with two places.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

MAX_AMOUNT = Decimal("9999999999999999.99")  # the largest payments.amount (NUMERIC(18, 2)) holds

# ISO 4217 currencies in use, with no minor units (the rest have two; see the module's note)
ZERO_DECIMALS = frozenset(
    ["BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"]
)
THREE_DECIMALS = frozenset(["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"])
TWO_DECIMALS = frozenset(
    [
        "AED",
        "AFN",
        "ALL",
        "AMD",
        "ANG",
        "AOA",
        "ARS",
        "AUD",
        "AWG",
        "AZN",
        "BAM",
        "BBD",
        "BDT",
        "BGN",
        "BMD",
        "BND",
        "BOB",
        "BRL",
        "BSD",
        "BTN",
        "BWP",
        "BYN",
        "BZD",
        "CAD",
        "CDF",
        "CHF",
        "CNY",
        "COP",
        "CRC",
        "CUP",
        "CVE",
        "CZK",
        "DKK",
        "DOP",
        "DZD",
        "EGP",
        "ERN",
        "ETB",
        "EUR",
        "FJD",
        "FKP",
        "GBP",
        "GEL",
        "GHS",
        "GIP",
        "GMD",
        "GTQ",
        "GYD",
        "HKD",
        "HNL",
        "HTG",
        "HUF",
        "IDR",
        "ILS",
        "INR",
        "IRR",
        "JMD",
        "KES",
        "KGS",
        "KHR",
        "KPW",
        "KYD",
        "KZT",
        "LAK",
        "LBP",
        "LKR",
        "LRD",
        "LSL",
        "MAD",
        "MDL",
        "MGA",
        "MKD",
        "MMK",
        "MNT",
        "MOP",
        "MRU",
        "MUR",
        "MVR",
        "MWK",
        "MXN",
        "MYR",
        "MZN",
        "NAD",
        "NGN",
        "NIO",
        "NOK",
        "NPR",
        "NZD",
        "PAB",
        "PEN",
        "PGK",
        "PHP",
        "PKR",
        "PLN",
        "QAR",
        "RON",
        "RSD",
        "RUB",
        "SAR",
        "SBD",
        "SCR",
        "SDG",
        "SEK",
        "SGD",
        "SHP",
        "SLE",
        "SOS",
        "SRD",
        "SSP",
        "STN",
        "SVC",
        "SYP",
        "SZL",
        "THB",
        "TJS",
        "TMT",
        "TOP",
        "TRY",
        "TTD",
        "TWD",
        "TZS",
        "UAH",
        "USD",
        "UYU",
        "UZS",
        "VES",
        "WST",
        "XCD",
        "YER",
        "ZAR",
        "ZMW",
        "ZWG",
    ]
)
CURRENCIES = ZERO_DECIMALS | TWO_DECIMALS
DEFAULT = "USD"
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}  # shown before the amount; others after it, by code


class UnknownCurrency(ValueError):
    """Not a currency prices can be given in (the message says why)."""


def normalise(code: str | None) -> str:
    """The upper-case ISO 4217 code, ``USD`` for None; raises UnknownCurrency."""
    if code is None:
        return DEFAULT
    value = code.strip().upper()
    if value in THREE_DECIMALS:
        raise UnknownCurrency(f"{value} has three minor units, which Kassa does not price in")
    if value not in CURRENCIES:
        raise UnknownCurrency(f"{code!r} is not an ISO 4217 currency code")
    return value


def priced(fixed_rates: str) -> list[str]:
    """The currencies a server prices whatever its market sources say: USD and those of
    ``FIXED_RATES`` (the API document lists them)."""
    from kassa_common.pricing.fixed import parse_fixed_rates

    return sorted(CURRENCIES & ({DEFAULT} | set(parse_fixed_rates(fixed_rates))))


def minor_units(code: str) -> int:
    return 0 if code in ZERO_DECIMALS else 2


def quantum(code: str) -> Decimal:
    return Decimal(1).scaleb(-minor_units(code))


def fits(amount: Decimal, code: str) -> bool:
    """Whether ``amount`` carries no more places than the currency's minor units."""
    return amount == amount.quantize(quantum(code))


def rounded(amount: Decimal, code: str) -> Decimal:
    """``amount`` to the currency's minor units (half up), at least one minor unit."""
    return max(amount.quantize(quantum(code), ROUND_HALF_UP), quantum(code))


def amount_text(amount: Decimal | float | str, code: str | None) -> str:
    """An amount at the currency's minor units, as a form shows it: ``12.50``, ``400``."""
    return str(Decimal(str(amount)).quantize(quantum(code or DEFAULT), ROUND_HALF_UP))


def money(amount: Decimal | float | str, code: str | None, grouped: bool = False) -> str:
    """An amount as a person reads it: ``$12.50``, ``€12.50``, ``¥400``, ``12.50 CHF``
    (``grouped``: thousands separated, ``$3,086.59``)."""
    code = code or DEFAULT
    text = f"{Decimal(amount_text(amount, code)):,}" if grouped else amount_text(amount, code)
    symbol = SYMBOLS.get(code)
    return f"{symbol}{text}" if symbol else f"{text} {code}"
