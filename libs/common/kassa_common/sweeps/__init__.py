"""Sweeps of forwarder deposits: the only code that writes sweep rows (sweeps, held
deposits, what a sweep moved).

Where to look:

- ``deposits``: which deposits hold confirmed funds due for a sweep (``SWEEP_MIN_USD``,
  ``SWEEP_MAX_AGE_HOURS``), their transfers claimed by a sweep or given back, and what a
  confirmed sweep records on each payment (``payment.swept``, through ``payments.apply``).
- ``records``: the sweep row from its signing to CONFIRMED or FAILED (sent, replaced,
  mined, reorged, reverted, failed, confirmed).
- ``holds``: deposits taken out of the batches (``SOLO``, ``HELD``), the operator's
  release (``kassa sweep --retry-held``), and the listing the dashboard and the CLI show.

The sweeper process (``services/sweeper``) does the chain work (balances, signing,
receipts) and calls the functions below in its step's transaction; it writes no sweep row
itself (the architecture test holds that).
"""

from kassa_common.sweeps.deposits import Deposit, SweepPolicy, already_empty, deposits_due, usd_value
from kassa_common.sweeps.holds import Held, HoldStatus
from kassa_common.sweeps.records import Cost

__all__ = [
    "Cost",
    "Deposit",
    "Held",
    "HoldStatus",
    "SweepPolicy",
    "already_empty",
    "deposits_due",
    "usd_value",
]
