"""Values between Python and the API's JSON: exact decimals both ways, UTC timestamps.

Amounts go out as JSON numbers written from the ``Decimal`` digits (``Decimal("25.10")``
is sent as ``25.10``, never through a float), and come back as ``Decimal``: a JSON number
is read through its shortest representation (``12.34`` stays ``Decimal("12.34")``), a
decimal string as it is written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

_FRACTION = re.compile(r"\.(\d+)")


def to_decimal(value: Any) -> Decimal:
    """A ``Decimal`` from a JSON number or decimal string (or a caller's int, float, str)."""
    if isinstance(value, Decimal):
        result = value
    elif isinstance(value, bool):
        raise TypeError("a boolean is not an amount")
    elif isinstance(value, int):
        result = Decimal(value)
    elif isinstance(value, float):
        result = Decimal(repr(value))  # the shortest text that reads back as this float
    elif isinstance(value, str):
        try:
            result = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"not a decimal number: {value!r}") from None
    else:
        raise TypeError(f"not a decimal number: {value!r}")
    if not result.is_finite():
        raise ValueError(f"not a finite number: {value!r}")
    return result


def parse_datetime(value: str) -> datetime:
    """An aware UTC-or-offset ``datetime`` from ISO 8601 (``2026-01-01T00:00:00.000Z``);
    any number of fraction digits; no offset means UTC."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python 3.10's fromisoformat takes only 3 or 6 fraction digits.
    text = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO 8601 timestamp: {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def format_param(value: Any) -> str:
    """A query-string value: timestamps in ISO 8601 (naive ones taken as UTC), decimals
    from their digits, booleans as ``true``/``false``."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return aware.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(to_decimal(value), "f")
    return str(value)


def dumps(value: Any) -> bytes:
    """JSON bytes for a request body, with ``Decimal`` written exactly as a number."""
    return _encode(value).encode("utf-8")


def _encode(value: Any) -> str:
    if isinstance(value, Decimal):
        return format(to_decimal(value), "f")
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(k))}:{_encode(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    if isinstance(value, (datetime, date)):
        return json.dumps(format_param(value))
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("JSON has no NaN or infinity")
    return json.dumps(value)
