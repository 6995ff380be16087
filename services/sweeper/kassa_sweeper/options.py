"""The sweeper's settings, read once by its entrypoints (the process and ``kassa sweep``).

They are the sweeper's alone, so they live here rather than in the shared ``Settings``:
the web and the other workers never see the sweeper key.

================================= ======= ==============================================
``SWEEPER_PRIVATE_KEY``           unset   the gas key (without it nothing is swept)
``SWEEP_MIN_USD``                 10      sweep a deposit once its confirmed value reaches…
``SWEEP_MAX_AGE_HOURS``           24      …or once its oldest unswept funds are this old
``SWEEP_INTERVAL_SECONDS``        15      how often the process looks for work
``SWEEP_REPLACE_SECONDS``         180     replace a sweep still unmined after this
``SWEEP_BATCH_SIZE``              50      deposits per ``flushMany``
``SWEEP_MAX_SPEND_USD_PER_HOUR``  100     the most the key spends on gas per network in any
                                          hour, in USD at the native coin's rate (``budget``)
``SWEEPER_NETWORKS``              all     comma-separated names; default every EVM network
                                          with an RPC URL and a forwarder factory
================================= ======= ==============================================
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Mapping

from kassa_common.chains.networks import Network
from kassa_common.config import Settings
from kassa_common.payments.sweeps import SweepPolicy
from kassa_sweeper.txs import Signer


def _positive(name: str, raw: str | None, default, kind):
    if raw is None or not raw.strip():
        return default
    try:
        value = kind(raw.strip())
    except (ValueError, InvalidOperation):
        value = None
    if value is None or value <= 0:
        raise ValueError(f"setting {name}: must be a positive number, got {raw!r}")
    return value


@dataclass(frozen=True)
class SweepOptions:
    private_key: str | None = field(default=None, repr=False)
    min_usd: Decimal = Decimal(10)
    max_age_hours: float = 24.0
    interval_seconds: float = 15.0
    replace_seconds: float = 180.0
    batch_size: int = 50
    max_spend_usd_per_hour: Decimal = Decimal(100)
    networks: tuple[str, ...] = ()  # upper-case; empty: every sweepable network

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "SweepOptions":
        env = os.environ if env is None else env
        d = cls()
        options = cls(
            private_key=(env.get("SWEEPER_PRIVATE_KEY") or "").strip() or None,
            min_usd=_positive("SWEEP_MIN_USD", env.get("SWEEP_MIN_USD"), d.min_usd, Decimal),
            max_age_hours=_positive("SWEEP_MAX_AGE_HOURS", env.get("SWEEP_MAX_AGE_HOURS"), d.max_age_hours, float),
            interval_seconds=_positive("SWEEP_INTERVAL_SECONDS", env.get("SWEEP_INTERVAL_SECONDS"),
                                       d.interval_seconds, float),
            replace_seconds=_positive("SWEEP_REPLACE_SECONDS", env.get("SWEEP_REPLACE_SECONDS"), d.replace_seconds,
                                      float),
            batch_size=_positive("SWEEP_BATCH_SIZE", env.get("SWEEP_BATCH_SIZE"), d.batch_size, int),
            max_spend_usd_per_hour=_positive("SWEEP_MAX_SPEND_USD_PER_HOUR", env.get("SWEEP_MAX_SPEND_USD_PER_HOUR"),
                                             d.max_spend_usd_per_hour, Decimal),
            networks=tuple(n.strip().upper() for n in (env.get("SWEEPER_NETWORKS") or "").split(",") if n.strip()),
        )
        options.signer()  # a malformed key fails at start, not at the first sweep
        return options

    def signer(self) -> Signer | None:
        return Signer(self.private_key) if self.private_key else None

    @property
    def policy(self) -> SweepPolicy:
        return SweepPolicy(self.min_usd, timedelta(hours=self.max_age_hours))

    def sweepable(self, settings: Settings) -> list[Network]:
        """EVM networks with an RPC URL and a forwarder factory, narrowed to ``networks``."""
        return [n for n in settings.networks if n.kind == "evm" and n.rpc_url and n.forwarder_factory
                and (not self.networks or n.name.upper() in self.networks)]
