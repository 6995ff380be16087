"""Expiry: the expirer's batch path of ``Trigger.EXPIRE``.

The same rule as the table's guard (``transitions.overdue_and_settled``), set-based for
speed: one statement claims the overdue rows with ``FOR UPDATE SKIP LOCKED`` (safe with
several expirers: each takes rows the others do not hold, nobody waits), moves them to
EXPIRED and, in the same statement, inserts each one's ``payment.expired`` event into the
outbox: one ``UPDATE`` of ``payments`` and one ``INSERT … SELECT`` of ``events`` per batch,
the event's payment object built by PostgreSQL (``EXPIRED_OBJECT``). A payment with a
counted transfer still seen-but-unconfirmed is held open. The few expired payments whose
object needs more than their own row (transfers, with refund totals; funds on a wrong
network) are shaped in Python (``payment_to_dict``, the one definition of the object) and
their events written in the same transaction; the unit of work commits both or neither.
The integration tests hold the SQL-built object to what ``payment_to_dict`` gives.

A live payment expires only once its network's settled line passed its ``expires_at``
(``SettledWatermark.settled_at``, written by the settler: the watcher had read the tip at
that time with every block up to it reported, and the settler has applied every one of
those reports; ``payments.watermark``). A watcher, RPC or settler outage, or a settler
behind on its queue, never expires a payment paid on time. Test-mode payments have no
chain and expire on time.
"""

from __future__ import annotations

import uuid
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from kassa_common.models import Payment
from kassa_common.payments.events import record_payment_events
from kassa_common.payments.queries import PAYMENT_COLUMNS
from kassa_common.payments.shape import PaymentRow
from kassa_common.payments.transitions import TRANSITIONS, Trigger
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import iso, utcnow


def _iso(column: str) -> str:
    """``timefmt.iso`` in SQL: UTC, milliseconds (truncated, as ``iso`` does), ``Z``."""
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


def _units_text(units: str) -> str:
    """``pricing.amounts.units_text`` in SQL: exact (a product with a power of ten, never a
    division), no trailing zeros."""
    return f"trim_scale({units} * ('1e-' || u.decimals)::numeric)::text"


# ``shape.payment_to_dict`` of an expired payment without transfers and without funds on a
# wrong network (so nothing refunded or refundable), from its row ``u``. JSONB keeps no key
# order, so neither the order here nor that of the Python object matters.
EXPIRED_OBJECT = f"""jsonb_build_object(
    'payment_id', u.id::text,
    'id', u.id::text,
    'short_id', u.short_id,
    'status', u.status,
    'amount', round(u.amount, 2)::float8,
    'currency', u.currency,
    'token', u.token,
    'network', u.network,
    'address', u.address,
    'crypto_amount', {_units_text("u.crypto_amount_units")},
    'amount_received', {_units_text("u.amount_received_units")},
    'refunded_amount', '0',
    'refundable_amount', '0',
    'exchange_rate', trim_scale(u.exchange_rate)::text,
    'rate_source', u.rate_source,
    'rate_locked_until', {_iso("coalesce(u.rate_locked_until, u.expires_at)")},
    'arrival_exchange_rate', trim_scale(u.arrival_exchange_rate)::text,
    'confirmations', u.confirmations,
    'required_confirmations', u.required_confirmations,
    'transaction_hash', u.transaction_hash,
    'checkout_url', u.checkout_url,
    'customer_email', u.customer_email,
    'customer_name', u.customer_name,
    'redirect_url', u.redirect_url,
    'cancel_url', u.cancel_url,
    'product_id', u.product_id::text,
    'metadata', u.metadata,
    'test_mode', u.test_mode,
    'expires_at', {_iso("u.expires_at")},
    'created_at', {_iso("u.created_at")},
    'updated_at', {_iso("u.updated_at")},
    'completed_at', {_iso("u.completed_at")},
    'settlement_address', u.settlement_address,
    'sweep_transaction_hash', u.sweep_tx_hash,
    'swept_at', {_iso("u.swept_at")},
    'wrong_network', '[]'::jsonb,
    'transfers', '[]'::jsonb
)"""

# One batch: claim, expire, write the events of those SQL can shape; returns every expired
# id, and whether its event is still to be written (``shaped``: false).
EXPIRE_BATCH = f"""
WITH due AS (
    SELECT p.id FROM payments p
    WHERE p.status = ANY(:sources) AND p.expires_at <= :now
      AND NOT EXISTS (SELECT FROM transfers t
                      WHERE t.payment_id = p.id AND t.status = '{TransferStatus.SEEN}' AND t.counted)
      AND (p.test_mode OR EXISTS (SELECT FROM settled_watermarks w
                                  WHERE w.network = p.network AND w.settled_at >= p.expires_at))
    ORDER BY p.expires_at
    LIMIT :limit
    FOR UPDATE OF p SKIP LOCKED
), expired AS (
    UPDATE payments p SET status = :target, updated_at = :now
    WHERE p.id = ANY(ARRAY(SELECT id FROM due))  -- by primary key, never a scan of the table
    RETURNING p.*,
              NOT EXISTS (SELECT FROM transfers t WHERE t.payment_id = p.id)
              AND jsonb_array_length(p.wrong_network) = 0 AS shaped
), to_write AS MATERIALIZED (
    SELECT u.*, 'evt_' || replace(gen_random_uuid()::text, '-', '') AS event_id FROM expired u WHERE u.shaped
), written AS (
    INSERT INTO events (id, type, merchant_id, test_mode, payment_id, payload, created_at)
    SELECT u.event_id, :event, u.merchant_id, u.test_mode, u.id,
           jsonb_build_object('id', u.event_id, 'event', :event, 'timestamp', :timestamp,
                              'test_mode', u.test_mode, 'data', {EXPIRED_OBJECT}),
           :now
    FROM to_write u
)
SELECT id, shaped FROM expired
"""


def expire_due(session: Session, *, now: datetime | None = None, limit: int = 1000) -> int:
    """Expire up to ``limit`` overdue open payments at once; returns how many."""
    now = now or utcnow()
    transition = TRANSITIONS[Trigger.EXPIRE]
    assert transition.target is not None and transition.event is not None  # EXPIRE has both
    session.flush()
    rows = (
        session.connection()
        .execute(
            sa.text(EXPIRE_BATCH),
            {
                "sources": sorted(transition.sources),
                "now": now,
                "limit": limit,
                "target": transition.target,
                "event": str(transition.event),
                "timestamp": iso(now),
            },
        )
        .all()
    )
    if not rows:
        return 0
    _show_expired(session, {r.id for r in rows}, transition.target, now)
    unshaped = [r.id for r in rows if not r.shaped]
    if unshaped:  # rare: transfers to show, refunds to total, wrong-network funds
        found = session.connection().execute(
            sa.select(*PAYMENT_COLUMNS).where(
                Payment.id == sa.any_(sa.bindparam("ids", unshaped, type_=ARRAY(UUID(as_uuid=True))))
            )
        )
        record_payment_events(session, [PaymentRow._make(r) for r in found], transition.event, now=now)
    return len(rows)


def _show_expired(session: Session, ids: set[uuid.UUID], status: str, now: datetime) -> None:
    """The ``Payment``s this session holds (usually none) as the UPDATE left them."""
    for held in list(session.identity_map.values()):
        if isinstance(held, Payment) and held.id in ids:
            set_committed_value(held, "status", status)
            set_committed_value(held, "updated_at", now)
