"""Settings, read once from the environment by each entrypoint and passed down.

Nothing below an entrypoint reads ``os.environ``: ``Settings.from_env()`` is the only
place, and every value has a documented default (docs/settings.md), declared once.

Where to look:

- ``Settings`` (here): every setting of every process. What several processes share sits at
  its top level (where the database, the broker and the cache are, the public URLs, the
  payments' and refunds' rules); a process's own knobs are grouped in a nested class of
  their own: ``settings.web`` (``WebSettings``), ``settings.rates`` (``RatesSettings``, the
  rate service ``kassa_common.pricing`` that the web, the settler and the sweeper build),
  ``settings.sender`` (``SenderSettings``, the webhook sender's webhooks and email),
  ``settings.watcher`` (``WatcherSettings``) and ``settings.sweeper`` (``SweeperSettings``).
  The environment variables keep their names (docs/settings.md lists them).
- ``values``: how a variable's text becomes its value (one parser per kind).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, is_dataclass, replace
from decimal import Decimal
from typing import Any

from kassa_common.chains.networks import Registry, load_registry
from kassa_common.config import values
from kassa_common.pricing import coinbase, coingecko, kraken
from kassa_common.pricing.fixed import DEFAULT_FIXED_RATES
from kassa_common.pricing.service import PROVIDERS

DEFAULT_SECRET_KEY = "dev-insecure-secret-change-me"
DEFAULT_SMTP_FROM = "Kassa <no-reply@localhost>"


class UnsafeSettings(ValueError):
    """A setting only a development stack may keep (the message says which, and what to do)."""


def _maybe(env: Mapping[str, str], name: str, coerce: Callable[[str], Any], default: Any) -> Any:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return coerce(raw)
    except ValueError as exc:
        raise ValueError(f"setting {name}: {exc}") from None


@dataclass(frozen=True)
class WebSettings:
    """The web's knobs (``kassa_api``: the API, the dashboard, the pages): sessions, limits,
    sign-in; their defaults are declared here only."""

    secret_key: str = field(default=DEFAULT_SECRET_KEY, repr=False)  # signs dashboard sessions
    rate_limit_per_minute: int = 100
    public_create_per_minute: int = 10  # payments one client address may start from product pages
    login_failures_per_address: int = 20  # failed dashboard logins one client address may make in 5 minutes
    require_2fa: bool = False  # every merchant must enrol in two-factor sign-in before using the dashboard
    signups_per_hour: int = 10  # dashboard sign-ups one client address may make in an hour
    operator_email: str | None = None  # emailed about each dashboard sign-up (none when unset)
    trusted_proxies: int = 0  # reverse proxies in front of the web whose X-Forwarded-For is believed
    wallet_change_hold_hours: float = 24.0  # a live wallet change waits this long (0: at once)
    metrics_token: str | None = field(default=None, repr=False)  # /metrics asks for it as a bearer token

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WebSettings:
        d = cls()
        return cls(
            secret_key=_maybe(env, "SECRET_KEY", str, d.secret_key),
            rate_limit_per_minute=_maybe(env, "RATE_LIMIT_PER_MINUTE", values.positive_int, d.rate_limit_per_minute),
            public_create_per_minute=_maybe(
                env, "PUBLIC_CREATE_PER_MINUTE", values.positive_int, d.public_create_per_minute
            ),
            login_failures_per_address=_maybe(
                env, "LOGIN_FAILURES_PER_ADDRESS", values.positive_int, d.login_failures_per_address
            ),
            require_2fa=_maybe(env, "REQUIRE_2FA", values.boolean, d.require_2fa),
            signups_per_hour=_maybe(env, "SIGNUPS_PER_HOUR", values.positive_int, d.signups_per_hour),
            operator_email=_maybe(env, "OPERATOR_EMAIL", values.operator_email, d.operator_email),
            trusted_proxies=_maybe(env, "TRUSTED_PROXIES", values.non_negative_int, d.trusted_proxies),
            wallet_change_hold_hours=_maybe(env, "WALLET_CHANGE_HOLD_HOURS", values.hours, d.wallet_change_hold_hours),
            metrics_token=_maybe(env, "METRICS_TOKEN", str, d.metrics_token),
        )


@dataclass(frozen=True)
class RatesSettings:
    """The rate service's knobs (``kassa_common.pricing``, docs/pricing.md: the web prices, the
    settler and the sweeper value); their defaults are declared here only."""

    fixed_rates: str = DEFAULT_FIXED_RATES
    fixed_rates_allow_live: bool = False  # fixed rates price live coin payments too (development only)
    url: str | None = None  # an operator's own price feed, one more source (pricing.custom)
    json_path: str = "data.amount"
    providers: tuple[str, ...] = PROVIDERS  # market rates for live payments
    coinbase_url: str = coinbase.DEFAULT_URL
    kraken_url: str = kraken.DEFAULT_URL
    coingecko_url: str = coingecko.DEFAULT_URL
    coingecko_api_key: str | None = field(default=None, repr=False)
    min_sources: int = 2
    max_deviation_pct: Decimal = Decimal(1)
    cache_seconds: float = 30.0
    stale_seconds: float = 300.0
    timeout_seconds: float = 3.0
    stablecoin_peg_tolerance_pct: Decimal = Decimal(1)
    # funds seen within the rate lock keep the locked rate if confirmed this long after it ends
    # (an unconfirmed transaction is no free option on the price); later: the rate at confirmation
    hold_grace_minutes: int = 60

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RatesSettings:
        d = cls()
        return cls(
            fixed_rates=_maybe(env, "FIXED_RATES", values.fixed_rates, d.fixed_rates),
            fixed_rates_allow_live=_maybe(env, "FIXED_RATES_ALLOW_LIVE", values.boolean, d.fixed_rates_allow_live),
            url=_maybe(env, "RATES_URL", str, d.url),
            json_path=_maybe(env, "RATES_JSON_PATH", str, d.json_path),
            providers=_maybe(env, "RATES_PROVIDERS", values.providers, d.providers),
            coinbase_url=_maybe(env, "RATES_COINBASE_URL", str, d.coinbase_url).rstrip("/"),
            kraken_url=_maybe(env, "RATES_KRAKEN_URL", str, d.kraken_url).rstrip("/"),
            coingecko_url=_maybe(env, "RATES_COINGECKO_URL", str, d.coingecko_url).rstrip("/"),
            coingecko_api_key=_maybe(env, "RATES_COINGECKO_API_KEY", str, d.coingecko_api_key),
            min_sources=_maybe(env, "RATES_MIN_SOURCES", values.positive_int, d.min_sources),
            max_deviation_pct=_maybe(env, "RATES_MAX_DEVIATION_PCT", values.pct("0", "100"), d.max_deviation_pct),
            cache_seconds=_maybe(env, "RATES_CACHE_SECONDS", values.positive_seconds, d.cache_seconds),
            stale_seconds=_maybe(env, "RATES_STALE_SECONDS", values.positive_seconds, d.stale_seconds),
            timeout_seconds=_maybe(env, "RATES_TIMEOUT_SECONDS", values.positive_seconds, d.timeout_seconds),
            stablecoin_peg_tolerance_pct=_maybe(
                env, "STABLECOIN_PEG_TOLERANCE_PCT", values.pct("0", "50"), d.stablecoin_peg_tolerance_pct
            ),
            hold_grace_minutes=_maybe(env, "RATE_HOLD_GRACE_MINUTES", values.non_negative_int, d.hold_grace_minutes),
        )

    def __post_init__(self) -> None:
        sources = len(self.providers) + (1 if self.url else 0)
        if sources and self.min_sources > sources:
            raise ValueError(
                f"setting RATES_MIN_SOURCES: {self.min_sources} sources needed but only {sources} "
                f"configured (RATES_PROVIDERS, RATES_URL)"
            )
        if self.stale_seconds < self.cache_seconds:
            raise ValueError("setting RATES_STALE_SECONDS: must be at least RATES_CACHE_SECONDS")


@dataclass(frozen=True)
class SenderSettings:
    """The webhook sender's knobs (``kassa_webhook_sender``: its webhook and email channels);
    their defaults are declared here only. The web reads ``webhook_allow_private_urls`` too,
    to refuse at once an endpoint the sender would refuse to call."""

    webhook_allow_private_urls: bool = False
    webhook_timeout_seconds: float = 10.0
    webhook_max_in_flight_per_endpoint: int = 4  # deliveries one endpoint may have under way at once
    webhook_retry_schedule: tuple[float, ...] | None = None  # None: the DESIGN schedule
    smtp_url: str | None = field(default=None, repr=False)  # None: no email notifications; may hold a password
    smtp_from: str = DEFAULT_SMTP_FROM

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SenderSettings:
        d = cls()
        return cls(
            webhook_allow_private_urls=_maybe(
                env, "WEBHOOK_ALLOW_PRIVATE_URLS", values.boolean, d.webhook_allow_private_urls
            ),
            webhook_timeout_seconds=_maybe(env, "WEBHOOK_TIMEOUT_SECONDS", float, d.webhook_timeout_seconds),
            webhook_max_in_flight_per_endpoint=_maybe(
                env, "WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT", values.positive_int, d.webhook_max_in_flight_per_endpoint
            ),
            webhook_retry_schedule=_maybe(env, "WEBHOOK_RETRY_SCHEDULE", values.seconds_list, d.webhook_retry_schedule),
            smtp_url=_maybe(env, "SMTP_URL", values.smtp_url, d.smtp_url),
            smtp_from=_maybe(env, "SMTP_FROM", str, d.smtp_from),
        )


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
            networks=_maybe(env, "CHAIN_WATCHER_NETWORKS", values.names, d.networks),
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
            min_usd=_maybe(env, "SWEEP_MIN_USD", values.positive(Decimal), d.min_usd),
            max_age_hours=_maybe(env, "SWEEP_MAX_AGE_HOURS", values.positive(float), d.max_age_hours),
            interval_seconds=_maybe(env, "SWEEP_INTERVAL_SECONDS", values.positive(float), d.interval_seconds),
            replace_seconds=_maybe(env, "SWEEP_REPLACE_SECONDS", values.positive(float), d.replace_seconds),
            batch_size=_maybe(env, "SWEEP_BATCH_SIZE", values.positive(int), d.batch_size),
            max_spend_usd_per_hour=_maybe(
                env, "SWEEP_MAX_SPEND_USD_PER_HOUR", values.positive(Decimal), d.max_spend_usd_per_hour
            ),
            networks=_maybe(env, "SWEEPER_NETWORKS", values.names, d.networks),
        )


@dataclass(frozen=True)
class SettlerSettings:
    """The settler's knobs (``kassa_settler``)."""

    consumers: int = 2  # consumers (threads, each its own broker connection) per settler process

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SettlerSettings:
        return cls(consumers=_maybe(env, "SETTLER_CONSUMERS", values.positive_int, cls.consumers))


@dataclass(frozen=True)
class Settings:
    """Every setting of every process, read once by ``from_env``. What several processes read
    sits at the top level; each process's own knobs are a nested group (``settings.web``,
    ``settings.rates``, ``settings.sender``, ``settings.watcher``, ``settings.sweeper``,
    ``settings.settler``), their
    defaults declared in their own class."""

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
    # -- the public URLs (the web builds them; the sender's emails and webhooks carry them) --------
    public_api_url: str = "http://127.0.0.1:8000/v1/api"
    checkout_url: str = "http://127.0.0.1:8000"
    dashboard_url: str = "http://127.0.0.1:8000/dashboard"
    # -- payments and refunds (the web creates them; the settler and the expirer move them) -------
    payment_lifetime_minutes: int = 60
    test_mode_complete_seconds: float = 10.0
    refund_claim_days: float = 30.0  # an unclaimed refund expires this long after its creation
    idempotency_ttl_hours: int = 24  # the web remembers a key this long; the expirer then forgets it
    audit_log_days: int = 365  # the expirer deletes audit rows older than this (kassa_common.retention)
    # -- each process's own ------------------------------------------------------------------------
    web: WebSettings = field(default_factory=WebSettings)
    rates: RatesSettings = field(default_factory=RatesSettings)
    sender: SenderSettings = field(default_factory=SenderSettings)
    watcher: WatcherSettings = field(default_factory=WatcherSettings)
    sweeper: SweeperSettings = field(default_factory=SweeperSettings)
    settler: SettlerSettings = field(default_factory=SettlerSettings)
    # -- the networks (<NETWORK>_RPC_URL…, kassa_common.chains.networks) ------------------------
    networks: Registry = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        d = cls()
        return cls(
            database_url=_maybe(env, "DATABASE_URL", values.database_url, d.database_url),
            database_read_url=_maybe(env, "DATABASE_READ_URL", values.database_url, d.database_read_url),
            db_pool_size=_maybe(env, "DB_POOL_SIZE", values.positive_int, d.db_pool_size),
            rabbitmq_url=_maybe(env, "RABBITMQ_URL", values.rabbitmq_url, d.rabbitmq_url),
            bus_prefix=_maybe(env, "BUS_PREFIX", str, d.bus_prefix),
            redis_url=_maybe(env, "REDIS_URL", str, d.redis_url),
            kassa_env=_maybe(env, "KASSA_ENV", values.environment, d.kassa_env),
            log_level=_maybe(env, "LOG_LEVEL", str, d.log_level).upper(),
            metrics_port=_maybe(env, "METRICS_PORT", int, d.metrics_port),
            public_api_url=_maybe(env, "PUBLIC_API_URL", str, d.public_api_url).rstrip("/"),
            checkout_url=_maybe(env, "CHECKOUT_URL", str, d.checkout_url).rstrip("/"),
            dashboard_url=_maybe(env, "DASHBOARD_URL", str, d.dashboard_url).rstrip("/"),
            payment_lifetime_minutes=_maybe(
                env, "PAYMENT_LIFETIME_MINUTES", values.positive_int, d.payment_lifetime_minutes
            ),
            test_mode_complete_seconds=_maybe(env, "TEST_MODE_COMPLETE_SECONDS", float, d.test_mode_complete_seconds),
            refund_claim_days=_maybe(env, "REFUND_CLAIM_DAYS", values.claim_days, d.refund_claim_days),
            idempotency_ttl_hours=_maybe(env, "IDEMPOTENCY_TTL_HOURS", values.positive_int, d.idempotency_ttl_hours),
            audit_log_days=_maybe(env, "AUDIT_LOG_DAYS", values.positive_int, d.audit_log_days),
            web=WebSettings.from_env(env),
            rates=RatesSettings.from_env(env),
            sender=SenderSettings.from_env(env),
            watcher=WatcherSettings.from_env(env),
            sweeper=SweeperSettings.from_env(env),
            settler=SettlerSettings.from_env(env),
            networks=load_registry(env),
        )

    def with_(self, **overrides: Any) -> Settings:
        """A copy with some settings changed; a group's fields as a mapping, the rest of the
        group kept: ``settings.with_(web={"require_2fa": True}, bus_prefix="t1")``."""
        for name, value in overrides.items():
            if isinstance(value, Mapping) and is_dataclass(getattr(self, name)):
                overrides[name] = replace(getattr(self, name), **value)
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
        if self.web.secret_key == DEFAULT_SECRET_KEY and not self.development:
            raise UnsafeSettings(
                "SECRET_KEY is the built-in development value, which anyone can read: set SECRET_KEY to a long "
                "random string (e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(48))'), or run a "
                "development stack with KASSA_ENV=development"
            )
