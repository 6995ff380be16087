"""The settler's batch: what one transaction of transfer reports holds, as one object.

``settle.lock_for_reports`` starts it (``begin``); it lives in the session's ``info`` under
one key, and everything along the settle path that behaves differently inside a batch asks
for it by name, ``batch_of(session)`` (None: no batch, so each asks the database and writes
at once):

- ``payments``, ``transfers``: the rows the batch locked up front, detached from the session;
  ``settle`` finds them here instead of asking once per report, and changes them in memory;
- ``refunds``: the refund totals of those payments, read once; their events' payment objects
  take them from here (``queries.payment_object``), their payments being detached;
- ``events``: the outbox rows of their transitions; ``events.record_payment_event`` appends
  here instead of adding an ``Event`` to the session;
- ``new``, ``loaded``: the transfers to insert, and the values every held row was read with,
  for the writer ``settle`` registers, which writes what changed, one statement per table,
  just before the commit (``end`` takes the batch out of the session then).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from kassa_common.models import Payment, Transfer
from kassa_common.payments.refunded import RefundTotals

KEY = "kassa.settle.batch"  # in ``Session.info``: the batch, read through ``batch_of`` alone


@dataclass
class Batch:
    """What a batch of reports holds locked in its transaction: the payments by lower-case
    address (None: no payment has it) with their merchants' tolerance, and every transfer of
    each of those payments (complete: a transfer of a payment is only ever written under the
    payment's lock, and this transaction holds it); what they have refunded; the events of
    their transitions; the new transfers and the values read (``loaded``: id(row) → (row,
    its values))."""

    payments: dict[str, tuple[Payment, Decimal] | None] = field(default_factory=dict)
    transfers: dict[uuid.UUID, list[Transfer]] = field(default_factory=dict)
    refunds: dict[uuid.UUID, RefundTotals] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    new: list[Transfer] = field(default_factory=list)
    loaded: dict[int, tuple[Any, dict[str, Any]]] = field(default_factory=dict)


def batch_of(session: Session) -> Batch | None:
    """The batch this session's transaction is settling, or None."""
    return session.info.get(KEY)


def begin(session: Session, write: Callable[[Session], None]) -> Batch:
    """A new batch in this session; ``write(session)`` runs just before its commit."""
    batch = session.info[KEY] = Batch()
    sa.event.listen(session, "before_commit", write, once=True)
    return batch


def end(session: Session) -> Batch | None:
    """The batch, taken out of the session (by its writer, before the commit)."""
    batch: Batch | None = session.info.pop(KEY, None)
    return batch
