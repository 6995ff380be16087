"""How each setting's text becomes its value: one parser per kind, each raising ``ValueError``
with a message that never repeats a secret (``Settings.from_env`` adds the variable's name)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from kassa_common.pricing.fixed import parse_fixed_rates
from kassa_common.pricing.service import PROVIDERS

SMTP_SCHEMES = ("smtp", "smtps")
ENVIRONMENTS = ("production", "development")


def hours(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 24 * 30:
        raise ValueError("must be from 0 to 720 hours")
    return value


def claim_days(text: str) -> float:
    value = float(text)
    if not 0 < value <= 365:
        raise ValueError("must be more than 0 and at most 365 days")
    return value


def boolean(value: str) -> bool:
    v = value.strip().lower()
    if v in {"1", "true", "yes", "on"}:
        return True
    if v in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise ValueError(f"must be a positive integer: {value!r}")
    return n


def non_negative_int(value: str) -> int:
    n = int(value)
    if n < 0:
        raise ValueError(f"must be 0 or a positive integer: {value!r}")
    return n


def seconds_list(value: str) -> tuple[float, ...]:
    items = tuple(float(x) for x in value.split(",") if x.strip())
    if not items or any(x <= 0 for x in items):
        raise ValueError(f"must be comma-separated positive seconds: {value!r}")
    return items


def environment(value: str) -> str:
    v = value.strip().lower()
    if v not in ENVIRONMENTS:
        raise ValueError(f"must be one of {', '.join(ENVIRONMENTS)}: {value!r}")
    return v


def smtp_url(value: str) -> str:
    """``smtp://[user:pass@]host[:port][?starttls=true]`` or ``smtps://...`` (checked here,
    read by the notifier). The message never repeats the value: it may hold a password."""
    try:
        parts = urlsplit(value.strip())
        _ = parts.port  # raises for a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in SMTP_SCHEMES or not parts.hostname:
        raise ValueError("must be smtp://[user:password@]host[:port][?starttls=true] or smtps://…")
    return value.strip()


def database_url(value: str) -> str:
    """A PostgreSQL URL, one host or several (libpq's ``host1:port1,host2:port2``); checked
    here so a typo fails at start. The message never repeats the value."""
    from kassa_common.db import sqlalchemy_url

    try:
        sqlalchemy_url(value)
    except Exception:  # noqa: BLE001 - SQLAlchemy's parse errors are of several kinds
        raise ValueError(
            "must be postgresql://[user[:password]@]host[:port][,host2[:port2]…]/database[?options]"
        ) from None
    return value.strip()


def rabbitmq_url(value: str) -> str:
    """One ``amqp://`` URL, or several separated by commas (the nodes of a cluster)."""
    from kassa_common.messaging.publisher import node_urls

    try:
        node_urls(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    return value.strip()


def operator_email(value: str) -> str | None:
    from kassa_common.emails import valid_email

    return valid_email(value) if value.strip() else None


def providers(value: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in value.split(",") if n.strip())
    if names == ("none",):
        return ()
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"must be a comma-separated list of {', '.join(PROVIDERS)} (or none): {value!r}")
    return names


def pct(low: str, high: str) -> Callable[[str], Decimal]:
    def parse(value: str) -> Decimal:
        try:
            pct = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"not a number: {value!r}") from None
        if not pct.is_finite() or not Decimal(low) <= pct <= Decimal(high):
            raise ValueError(f"must be a percentage from {low} to {high}: {value!r}")
        return pct

    return parse


def positive_seconds(value: str) -> float:
    seconds = float(value)
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"must be a positive number of seconds: {value!r}")
    return seconds


def fixed_rates(value: str) -> str:
    parse_fixed_rates(value)  # refuses a malformed list at start, naming the entry
    return value


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """A coercer to a positive ``kind`` (int, float, Decimal)."""

    def coerce(value: str) -> Any:
        try:
            n = kind(value.strip())
        except (ValueError, InvalidOperation):
            n = None
        if n is None or n <= 0:
            raise ValueError(f"must be a positive number, got {value!r}")
        return n

    return coerce


def names(value: str) -> tuple[str, ...]:
    """Comma-separated network names, upper case."""
    return tuple(n.strip().upper() for n in value.split(",") if n.strip())
