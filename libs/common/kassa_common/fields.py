"""The API's field types and base models, shared by every resource's request and response
models (each resource keeps its own: ``products``, ``webhooks``, ``events``, the payment's in
``payments.shape``): they validate input and generate the OpenAPI document."""

from __future__ import annotations

import math
import re
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    WrapValidator,
)

from kassa_common import numbers
from kassa_common.emails import valid_email
from kassa_common.messaging.messages import WEBHOOK_EVENTS
from kassa_common.pricing import currencies


class FieldsError(ValueError):
    """A rule spanning several fields: the error details name each of ``fields``."""

    def __init__(self, message: str, fields: list[str]) -> None:
        super().__init__(message)
        self.fields = fields


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise ValueError("must be a JSON number")  # noqa: TRY004 - pydantic reports a ValueError
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    return numbers.check(value)


def _email(value: str) -> str:
    return valid_email(value)  # the one rule (kassa_common.emails); InvalidEmail is a ValueError


def _http_url(value: str) -> str:
    if not re.match(r"^https?://[^\s/$.?#][^\s]*$", value, re.IGNORECASE):
        raise ValueError("must be an absolute http(s) URL")
    try:
        parts = urlsplit(value)
        port = parts.port  # raises ValueError when out of range
    except ValueError:
        port = 0
    if port == 0:
        raise ValueError("must be an absolute http(s) URL with a valid host and port")
    if not parts.hostname:
        raise ValueError("must be an absolute http(s) URL with a host")
    return value


META_TEXT = 500  # characters of a metadata string


def _meta_value(value: Any, handler: Any) -> Any:
    """A metadata value, kept exactly as sent: a string stays a string (a numeric one too),
    an integer an integer, and a decimal number is taken only if the float it is stored as
    is that same number (``0.1``, ``2.5e-7``); one a float would round (``0.12345678901234567890``)
    is refused, to be sent as a string, rather than changed. Every number is bounded first."""
    if value is None or isinstance(value, (bool, str)):
        if isinstance(value, str) and len(value) > META_TEXT:
            raise ValueError(f"metadata strings have at most {META_TEXT} characters")
        return value
    if isinstance(value, int):
        if not numbers.within(value):
            raise numbers.NumberOutOfBounds
        return value
    if isinstance(value, (float, Decimal)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError("metadata numbers must be finite")
        exact = numbers.check(value)
        kept = float(exact)
        if Decimal(repr(kept)) != exact:
            raise ValueError(
                "metadata numbers are kept as 64-bit floats: this one would change (at most 17 "
                "significant digits); send it as a string to keep it exactly"
            )
        return kept
    raise ValueError(f"metadata values are strings (up to {META_TEXT} characters), numbers, booleans or null")


def _currency(value: str) -> str:
    try:
        return currencies.normalise(value)
    except currencies.UnknownCurrency as exc:
        raise ValueError(str(exc)) from None


def _upper(value: Any) -> Any:
    return value.strip().upper() if isinstance(value, str) else value


Amount = Annotated[
    Decimal,
    BeforeValidator(_number),
    Field(ge=Decimal("0.01"), le=Decimal(1000000000), decimal_places=2),
    WithJsonSchema(
        {
            "type": "number",
            "minimum": 0.01,
            "maximum": 1e9,
            "multipleOf": 0.01,
            "description": "in `currency`, at most its minor units (2 for USD/EUR, 0 for JPY)",
        }
    ),
]
CurrencyCode = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=8),
    AfterValidator(_currency),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": "^[A-Za-z]{3}$",
            "default": "USD",
            "x-kassa-values": "currencies",
            "description": "ISO 4217 code, e.g. EUR (any case; upper case on output). "
            "Listed: those this server always prices; live mode also "
            "takes others its market sources price",
        }
    ),
]
Price = Annotated[
    Decimal,
    BeforeValidator(_number),
    Field(ge=Decimal("0.01"), le=Decimal(1000000000), decimal_places=18),
    WithJsonSchema(
        {
            "type": "number",
            "minimum": 0.01,
            "maximum": 1e9,
            "description": "in `currency` (its minor units) for FIAT; token units for CRYPTO",
        }
    ),
]
Email = Annotated[
    str,
    StringConstraints(strip_whitespace=True, max_length=320),
    AfterValidator(_email),
    WithJsonSchema({"type": "string", "format": "email", "maxLength": 320}),
]
HttpUrl = Annotated[
    str,
    StringConstraints(strip_whitespace=True, max_length=2048),
    AfterValidator(_http_url),
    WithJsonSchema({"type": "string", "format": "uri", "maxLength": 2048, "description": "absolute http(s) URL"}),
]
Code = Annotated[str, BeforeValidator(_upper), StringConstraints(min_length=1, max_length=32, pattern=r"^[A-Z0-9_]+$")]
# Token and network names: openapi.py lists the values of the running server's registry
# wherever this marker is (case-insensitive on input, upper case on output).
TokenCode = Annotated[Code, WithJsonSchema({"type": "string", "x-kassa-values": "tokens"})]
NetworkCode = Annotated[Code, WithJsonSchema({"type": "string", "x-kassa-values": "networks"})]
# White space as Python strips it and as JSON Schema's \s (ECMA-262) knows it: the two
# differ (U+0085 and U+001C-U+001F are only Python's, U+FEFF only ECMA's), so a name must
# have a character outside both, spelled out so the server and the document agree.
BLANK = r"\t\n\x0b\x0c\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
VISIBLE = f"[^{BLANK}]"
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=VISIBLE)]
MetaKey = Annotated[str, StringConstraints(min_length=1, max_length=40)]
_BOUND = float(10 ** (numbers.MAX_EXPONENT + 1))
_TINY = float(f"1e-{numbers.MAX_EXPONENT}")
MetaValue = Annotated[
    Annotated[str, StringConstraints(max_length=META_TEXT)] | int | float | bool | None,
    WrapValidator(_meta_value),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": META_TEXT},
                # numbers within the bound (kassa_common.numbers): below 1e31, and none
                # closer to zero than 1e-30 but zero itself
                {"type": "integer", "exclusiveMinimum": -_BOUND, "exclusiveMaximum": _BOUND},
                {"type": "number", "minimum": _TINY, "exclusiveMaximum": _BOUND},
                {"type": "number", "exclusiveMinimum": -_BOUND, "maximum": -_TINY},
                {"type": "number", "const": 0},
                {"type": "boolean"},
                {"type": "null"},
            ],
            "description": "a string (up to 500 characters), a number (kept as sent: a decimal "
            "a 64-bit float would change is refused, send it as a string), a boolean or null",
        }
    ),
]
if TYPE_CHECKING:
    EventName = str
else:  # the payment and refund events, as a Literal for the OpenAPI document
    EventName = Literal[tuple(e.value for e in WEBHOOK_EVENTS)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", str_max_length=10_000)


class PageMeta(BaseModel):
    page: int
    pageSize: int
    total: int
    pages: int


def _whole(value: Any) -> Any:
    """A query's whole number: digits only (no sign, point or exponent; at most 9 of them)."""
    if isinstance(value, str) and not re.fullmatch(r"[0-9]{1,9}", value):
        raise ValueError("must be a whole number written with digits only")
    return value


_ISO_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?"
)


def _iso_time(value: Any) -> Any:
    """A query's moment: ISO 8601 text only (pydantic alone also takes a Unix time, "0.5")."""
    if isinstance(value, str) and not _ISO_TIME.fullmatch(value):
        raise ValueError("must be an ISO 8601 date and time, such as 2026-03-31T12:00:00Z")
    return value


# Query parameters: a whole number or a moment, as the document says, bounded by its text.
QueryInt = Annotated[int, BeforeValidator(_whole)]
QueryTime = Annotated[datetime, BeforeValidator(_iso_time)]


class ListPage(Strict):
    page: QueryInt = Field(1, ge=1, le=1_000_000)
    pageSize: QueryInt = Field(10, ge=1, le=100)


class Deleted(BaseModel):
    deleted: bool
