"""Settings, read once from the environment by each entrypoint and passed down.

Nothing below an entrypoint reads ``os.environ``: ``Settings.from_env()`` is the only
place, and every value has a documented default (docs/settings.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from kassa_common.chains.networks import Registry, load_registry
from kassa_common.pricing import coinbase, coingecko, kraken
from kassa_common.pricing.fixed import DEFAULT_FIXED_RATES, parse_fixed_rates
from kassa_common.pricing.service import PROVIDERS

DEFAULT_SECRET_KEY = "dev-insecure-secret-change-me"
DEFAULT_SMTP_FROM = "Kassa <no-reply@localhost>"
SMTP_SCHEMES = ("smtp", "smtps")
ENVIRONMENTS = ("production", "development")


class UnsafeSettings(ValueError):
    """A setting only a development stack may keep (the message says which, and what to do)."""


def _hours(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 24 * 30:
        raise ValueError("must be from 0 to 720 hours")
    return value


def _claim_days(text: str) -> float:
    value = float(text)
    if not 0 < value <= 365:
        raise ValueError("must be more than 0 and at most 365 days")
    return value


def _bool(value: str) -> bool:
    v = value.strip().lower()
    if v in {"1", "true", "yes", "on"}:
        return True
    if v in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _positive_int(value: str) -> int:
    n = int(value)
    if n <= 0:
        raise ValueError(f"must be a positive integer: {value!r}")
    return n


def _non_negative_int(value: str) -> int:
    n = int(value)
    if n < 0:
        raise ValueError(f"must be 0 or a positive integer: {value!r}")
    return n


def _seconds_list(value: str) -> tuple[float, ...]:
    items = tuple(float(x) for x in value.split(",") if x.strip())
    if not items or any(x <= 0 for x in items):
        raise ValueError(f"must be comma-separated positive seconds: {value!r}")
    return items


def _environment(value: str) -> str:
    v = value.strip().lower()
    if v not in ENVIRONMENTS:
        raise ValueError(f"must be one of {', '.join(ENVIRONMENTS)}: {value!r}")
    return v


def _smtp_url(value: str) -> str:
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


def _database_url(value: str) -> str:
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


def _rabbitmq_url(value: str) -> str:
    """One ``amqp://`` URL, or several separated by commas (the nodes of a cluster)."""
    from kassa_common.messaging.publisher import node_urls

    try:
        node_urls(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    return value.strip()


def _operator_email(value: str) -> str | None:
    from kassa_common.emails import valid_email

    return valid_email(value) if value.strip() else None


def _providers(value: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in value.split(",") if n.strip())
    if names == ("none",):
        return ()
    unknown = [n for n in names if n not in PROVIDERS]
    if unknown or len(set(names)) != len(names):
        raise ValueError(f"must be a comma-separated list of {', '.join(PROVIDERS)} (or none): {value!r}")
    return names


def _pct(low: str, high: str) -> Callable[[str], Decimal]:
    def parse(value: str) -> Decimal:
        try:
            pct = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"not a number: {value!r}") from None
        if not pct.is_finite() or not Decimal(low) <= pct <= Decimal(high):
            raise ValueError(f"must be a percentage from {low} to {high}: {value!r}")
        return pct

    return parse


def _positive_seconds(value: str) -> float:
    seconds = float(value)
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"must be a positive number of seconds: {value!r}")
    return seconds


def _fixed_rates(value: str) -> str:
    parse_fixed_rates(value)  # refuses a malformed list at start, naming the entry
    return value


def _positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
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


def _names(value: str) -> tuple[str, ...]:
    """Comma-separated network names, upper case."""
    return tuple(n.strip().upper() for n in value.split(",") if n.strip())


def _maybe(env: Mapping[str, str], name: str, coerce: Callable[[str], Any], default: Any) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return coerce(raw)
    except ValueError as exc:
        raise ValueError(f"setting {name}: {exc}") from None


@dataclass(frozen=True)
class WatcherSettings:
    """The chain watcher's knobs (``kassa_chain_watcher``); their defaults are declared here only."""

    poll_seconds: float | None = None  # None: a tenth of the block time, 0.05..2 s
    batch_blocks: int = 500
    reload_seconds: float = 30.0
    networks: tuple[str, ...] = ()  # upper-case names; empty: every network with an RPC URL
    standby_seconds: float = 1.0  # not from the environment: a standby's wait before it tries the lock again

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WatcherSettings:
        d = cls()
        return cls(
            poll_seconds=_maybe(env, "CHAIN_WATCHER_POLL_SECONDS", float, d.poll_seconds),
            batch_blocks=_maybe(env, "CHAIN_WATCHER_BATCH_BLOCKS", int, d.batch_blocks),
            reload_seconds=_maybe(env, "CHAIN_WATCHER_RELOAD_SECONDS", float, d.reload_seconds),
            networks=_maybe(env, "CHAIN_WATCHER_NETWORKS", _names, d.networks),
        )


@dataclass(frozen=True)
class SweeperSettings:
    """The sweeper's knobs (``kassa_sweeper``: the process and ``kassa sweep``); their defaults
    are declared here only. The key reaches only the processes whose environment holds it."""

    private_key: str | None = field(default=None, repr=False)  # the gas key; without it nothing is swept
    min_usd: Decimal = Decimal(10)
    max_age_hours: float = 24.0
    interval_seconds: float = 15.0
    replace_seconds: float = 180.0
    batch_size: int = 50
    max_spend_usd_per_hour: Decimal = Decimal(100)
    networks: tuple[str, ...] = ()  # upper-case names; empty: every sweepable network

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SweeperSettings:
        d = cls()
        return cls(
            private_key=(env.get("SWEEPER_PRIVATE_KEY") or "").strip() or None,
            min_usd=_maybe(env, "SWEEP_MIN_USD", _positive(Decimal), d.min_usd),
            max_age_hours=_maybe(env, "SWEEP_MAX_AGE_HOURS", _positive(float), d.max_age_hours),
            interval_seconds=_maybe(env, "SWEEP_INTERVAL_SECONDS", _positive(float), d.interval_seconds),
            replace_seconds=_maybe(env, "SWEEP_REPLACE_SECONDS", _positive(float), d.replace_seconds),
            batch_size=_maybe(env, "SWEEP_BATCH_SIZE", _positive(int), d.batch_size),
            max_spend_usd_per_hour=_maybe(
                env, "SWEEP_MAX_SPEND_USD_PER_HOUR", _positive(Decimal), d.max_spend_usd_per_hour
            ),
            networks=_maybe(env, "SWEEPER_NETWORKS", _names, d.networks),
        )


@dataclass(frozen=True)
class Settings:
    """Every setting of every process, read once by ``from_env``. Grouped by the process that
    reads it: the sections below in order; the chain watcher's and the sweeper's are nested
    (``settings.watcher``, ``settings.sweeper``), their defaults declared in their own class."""

    # -- every process: where the database, the broker and the cache are; logs and metrics ----
    database_url: str = "postgresql://postgres@127.0.0.1:5432/kassa"  # one host, or several (libpq multi-host)
    database_read_url: str | None = None  # dashboard lists and CSV export; None: database_url
    db_pool_size: int = 10
    rabbitmq_url: str = "amqp://guest:guest@127.0.0.1:5672/%2F"
    bus_prefix: str = ""  # prefixes the exchange and queue names (isolated test runs)
    redis_url: str | None = None
    kassa_env: str = "production"  # "development": the local stack (make run, docker compose)
    log_level: str = "INFO"
    metrics_port: int | None = None
    metrics_token: str | None = field(default=None, repr=False)  # the web's /metrics asks for it as a bearer token
    # -- the public URLs (the web builds them; the sender's emails and webhooks carry them) --------
    public_api_url: str = "http://127.0.0.1:8000/v1/api"
    checkout_url: str = "http://127.0.0.1:8000"
    dashboard_url: str = "http://127.0.0.1:8000/dashboard"
    # -- the web (API, dashboard, pages): sessions, limits, sign-in -------------------------------
    secret_key: str = DEFAULT_SECRET_KEY
    rate_limit_per_minute: int = 100
    public_create_per_minute: int = 10  # payments one client address may start from product pages
    login_failures_per_address: int = 20  # failed dashboard logins one client address may make in 5 minutes
    require_2fa: bool = False  # every merchant must enrol in two-factor sign-in before using the dashboard
    signups_per_hour: int = 10  # dashboard sign-ups one client address may make in an hour
    operator_email: str | None = None  # emailed about each dashboard sign-up (none when unset)
    trusted_proxies: int = 0  # reverse proxies in front of the web whose X-Forwarded-For is believed
    idempotency_ttl_hours: int = 24
    wallet_change_hold_hours: float = 24.0  # a live wallet change waits this long (0: at once)
    # -- payments and refunds (the web creates them; the settler and the expirer move them) -------
    payment_lifetime_minutes: int = 60
    test_mode_complete_seconds: float = 10.0
    refund_claim_days: float = 30.0  # an unclaimed refund expires this long after its creation
    settler_consumers: int = 2  # consumers (threads, each its own broker connection) per settler process
    # -- webhooks and email (the web checks endpoints; the webhook-sender delivers) ---------------
    webhook_allow_private_urls: bool = False
    webhook_timeout_seconds: float = 10.0
    webhook_max_in_flight_per_endpoint: int = 4  # deliveries one endpoint may have under way at once
    webhook_retry_schedule: tuple[float, ...] | None = None  # None: the DESIGN schedule
    smtp_url: str | None = field(default=None, repr=False)  # None: no email notifications; may hold a password
    smtp_from: str = DEFAULT_SMTP_FROM
    # -- rates (kassa_common.pricing, docs/pricing.md: the web prices, the settler and sweeper value) --
    fixed_rates: str = DEFAULT_FIXED_RATES
    fixed_rates_allow_live: bool = False  # fixed rates price live coin payments too (development only)
    rates_url: str | None = None  # an operator's own price feed, one more source (pricing.custom)
    rates_json_path: str = "data.amount"
    rates_providers: tuple[str, ...] = PROVIDERS  # market rates for live payments
    rates_coinbase_url: str = coinbase.DEFAULT_URL
    rates_kraken_url: str = kraken.DEFAULT_URL
    rates_coingecko_url: str = coingecko.DEFAULT_URL
    rates_coingecko_api_key: str | None = field(default=None, repr=False)
    rates_min_sources: int = 2
    rates_max_deviation_pct: Decimal = Decimal(1)
    rates_cache_seconds: float = 30.0
    rates_stale_seconds: float = 300.0
    rates_timeout_seconds: float = 3.0
    stablecoin_peg_tolerance_pct: Decimal = Decimal(1)
    # funds seen within the rate lock keep the locked rate if confirmed this long after it ends
    # (an unconfirmed transaction is no free option on the price); later: the rate at confirmation
    rate_hold_grace_minutes: int = 60
    # -- the chain watcher (CHAIN_WATCHER_*) and the sweeper (SWEEPER_*, SWEEP_*) ---------------
    watcher: WatcherSettings = field(default_factory=WatcherSettings)
    sweeper: SweeperSettings = field(default_factory=SweeperSettings)
    # -- the networks (<NETWORK>_RPC_URL…, kassa_common.chains.networks) ------------------------
    networks: Registry = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        d = cls()
        return cls(
            database_url=_maybe(env, "DATABASE_URL", _database_url, d.database_url),
            database_read_url=_maybe(env, "DATABASE_READ_URL", _database_url, None),
            rabbitmq_url=_maybe(env, "RABBITMQ_URL", _rabbitmq_url, d.rabbitmq_url),
            redis_url=_maybe(env, "REDIS_URL", str, None),
            public_api_url=_maybe(env, "PUBLIC_API_URL", str, d.public_api_url).rstrip("/"),
            checkout_url=_maybe(env, "CHECKOUT_URL", str, d.checkout_url).rstrip("/"),
            dashboard_url=_maybe(env, "DASHBOARD_URL", str, d.dashboard_url).rstrip("/"),
            secret_key=_maybe(env, "SECRET_KEY", str, d.secret_key),
            kassa_env=_maybe(env, "KASSA_ENV", _environment, d.kassa_env),
            payment_lifetime_minutes=_maybe(env, "PAYMENT_LIFETIME_MINUTES", _positive_int, d.payment_lifetime_minutes),
            rate_limit_per_minute=_maybe(env, "RATE_LIMIT_PER_MINUTE", _positive_int, d.rate_limit_per_minute),
            public_create_per_minute=_maybe(env, "PUBLIC_CREATE_PER_MINUTE", _positive_int, d.public_create_per_minute),
            login_failures_per_address=_maybe(
                env, "LOGIN_FAILURES_PER_ADDRESS", _positive_int, d.login_failures_per_address
            ),
            require_2fa=_maybe(env, "REQUIRE_2FA", _bool, d.require_2fa),
            signups_per_hour=_maybe(env, "SIGNUPS_PER_HOUR", _positive_int, d.signups_per_hour),
            operator_email=_maybe(env, "OPERATOR_EMAIL", _operator_email, None),
            trusted_proxies=_maybe(env, "TRUSTED_PROXIES", _non_negative_int, d.trusted_proxies),
            idempotency_ttl_hours=_maybe(env, "IDEMPOTENCY_TTL_HOURS", _positive_int, d.idempotency_ttl_hours),
            test_mode_complete_seconds=_maybe(env, "TEST_MODE_COMPLETE_SECONDS", float, d.test_mode_complete_seconds),
            webhook_allow_private_urls=_maybe(env, "WEBHOOK_ALLOW_PRIVATE_URLS", _bool, d.webhook_allow_private_urls),
            webhook_timeout_seconds=_maybe(env, "WEBHOOK_TIMEOUT_SECONDS", float, d.webhook_timeout_seconds),
            webhook_max_in_flight_per_endpoint=_maybe(
                env, "WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", _positive_int, d.webhook_max_in_flight_per_endpoint
            ),
            webhook_retry_schedule=_maybe(env, "WEBHOOK_RETRY_SCHEDULE", _seconds_list, None),
            wallet_change_hold_hours=_maybe(env, "WALLET_CHANGE_HOLD_HOURS", _hours, d.wallet_change_hold_hours),
            refund_claim_days=_maybe(env, "REFUND_CLAIM_DAYS", _claim_days, d.refund_claim_days),
            fixed_rates=_maybe(env, "FIXED_RATES", _fixed_rates, d.fixed_rates),
            fixed_rates_allow_live=_maybe(env, "FIXED_RATES_ALLOW_LIVE", _bool, d.fixed_rates_allow_live),
            rates_url=_maybe(env, "RATES_URL", str, None),
            rates_json_path=_maybe(env, "RATES_JSON_PATH", str, d.rates_json_path),
            rates_providers=_maybe(env, "RATES_PROVIDERS", _providers, d.rates_providers),
            rates_coinbase_url=_maybe(env, "RATES_COINBASE_URL", str, d.rates_coinbase_url).rstrip("/"),
            rates_kraken_url=_maybe(env, "RATES_KRAKEN_URL", str, d.rates_kraken_url).rstrip("/"),
            rates_coingecko_url=_maybe(env, "RATES_COINGECKO_URL", str, d.rates_coingecko_url).rstrip("/"),
            rates_coingecko_api_key=_maybe(env, "RATES_COINGECKO_API_KEY", str, None),
            rates_min_sources=_maybe(env, "RATES_MIN_SOURCES", _positive_int, d.rates_min_sources),
            rates_max_deviation_pct=_maybe(env, "RATES_MAX_DEVIATION_PCT", _pct("0", "100"), d.rates_max_deviation_pct),
            rates_cache_seconds=_maybe(env, "RATES_CACHE_SECONDS", _positive_seconds, d.rates_cache_seconds),
            rates_stale_seconds=_maybe(env, "RATES_STALE_SECONDS", _positive_seconds, d.rates_stale_seconds),
            rates_timeout_seconds=_maybe(env, "RATES_TIMEOUT_SECONDS", _positive_seconds, d.rates_timeout_seconds),
            rate_hold_grace_minutes=_maybe(
                env, "RATE_HOLD_GRACE_MINUTES", _non_negative_int, d.rate_hold_grace_minutes
            ),
            stablecoin_peg_tolerance_pct=_maybe(
                env, "STABLECOIN_PEG_TOLERANCE_PCT", _pct("0", "50"), d.stablecoin_peg_tolerance_pct
            ),
            db_pool_size=_maybe(env, "DB_POOL_SIZE", _positive_int, d.db_pool_size),
            settler_consumers=_maybe(env, "SETTLER_CONSUMERS", _positive_int, d.settler_consumers),
            log_level=_maybe(env, "LOG_LEVEL", str, d.log_level).upper(),
            metrics_port=_maybe(env, "METRICS_PORT", int, None),
            metrics_token=_maybe(env, "METRICS_TOKEN", str, None),
            bus_prefix=_maybe(env, "BUS_PREFIX", str, ""),
            smtp_url=_maybe(env, "SMTP_URL", _smtp_url, None),
            smtp_from=_maybe(env, "SMTP_FROM", str, d.smtp_from),
            watcher=WatcherSettings.from_env(env),
            sweeper=SweeperSettings.from_env(env),
            networks=load_registry(env),
        )

    def __post_init__(self) -> None:
        sources = len(self.rates_providers) + (1 if self.rates_url else 0)
        if sources and self.rates_min_sources > sources:
            raise ValueError(
                f"setting RATES_MIN_SOURCES: {self.rates_min_sources} sources needed but only {sources} "
                f"configured (RATES_PROVIDERS, RATES_URL)"
            )
        if self.rates_stale_seconds < self.rates_cache_seconds:
            raise ValueError("setting RATES_STALE_SECONDS: must be at least RATES_CACHE_SECONDS")

    def with_(self, **overrides: Any) -> Settings:
        return replace(self, **overrides)

    @property
    def read_database_url(self) -> str:
        """Where the dashboard's lists and CSV export read: a replica when one is set."""
        return self.database_read_url or self.database_url

    @property
    def development(self) -> bool:
        """A development stack: published test keys in live mode (with a warning) and the
        built-in ``SECRET_KEY`` are tolerated."""
        return self.kassa_env == "development"

    def check_web(self) -> None:
        """Raise ``UnsafeSettings`` if the web process must not start with these settings."""
        if self.secret_key == DEFAULT_SECRET_KEY and not self.development:
            raise UnsafeSettings(
                "SECRET_KEY is the built-in development value, which anyone can read: set SECRET_KEY to a long "
                "random string (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(48))'), or run a "
                "development stack with KASSA_ENV=development"
            )
