"""What the sweeper makes of its settings (``Settings.sweeper``, a ``SweeperSettings``: the
environment's ``SWEEPER_*``/``SWEEP_*``, defaults declared there only and listed in
docs/settings.md): the signer of its key, the sweep policy and the networks it sweeps.
Its entrypoints (the process and ``kassa sweep``) call :func:`checked` at start.
"""

from __future__ import annotations

from datetime import timedelta

from kassa_common.chains.networks import Network
from kassa_common.config import Settings, SweeperSettings
from kassa_common.sweeps import SweepPolicy
from kassa_sweeper.txs import Signer


def checked(settings: Settings) -> SweeperSettings:
    """The sweeper's settings, once its key is known to be well formed (a malformed key fails
    at start, not at the first sweep)."""
    signer(settings.sweeper)
    return settings.sweeper


def signer(options: SweeperSettings) -> Signer | None:
    return Signer(options.private_key) if options.private_key else None


def policy(options: SweeperSettings) -> SweepPolicy:
    return SweepPolicy(options.min_usd, timedelta(hours=options.max_age_hours))


def sweepable(options: SweeperSettings, settings: Settings) -> list[Network]:
    """EVM networks with an RPC URL and a forwarder factory, narrowed to ``options.networks``."""
    return [
        n
        for n in settings.networks
        if n.kind == "evm"
        and n.rpc_url
        and n.forwarder_factory
        and (not options.networks or n.name.upper() in options.networks)
    ]
