"""The sweeper's settings, as its entrypoints (the process and ``kassa sweep``) take them
from ``Settings`` (which alone reads the environment). The key reaches only the processes
whose environment holds it (the compose file gives it to the sweeper and the migration):

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

from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from kassa_common.chains.networks import Network
from kassa_common.config import Settings
from kassa_common.sweeps import SweepPolicy
from kassa_sweeper.txs import Signer


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
    def from_settings(cls, settings: Settings) -> SweepOptions:
        options = cls(
            private_key=settings.sweeper_private_key,
            min_usd=settings.sweep_min_usd,
            max_age_hours=settings.sweep_max_age_hours,
            interval_seconds=settings.sweep_interval_seconds,
            replace_seconds=settings.sweep_replace_seconds,
            batch_size=settings.sweep_batch_size,
            max_spend_usd_per_hour=settings.sweep_max_spend_usd_per_hour,
            networks=settings.sweeper_networks,
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
        return [
            n
            for n in settings.networks
            if n.kind == "evm"
            and n.rpc_url
            and n.forwarder_factory
            and (not self.networks or n.name.upper() in self.networks)
        ]
