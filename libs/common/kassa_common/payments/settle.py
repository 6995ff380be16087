"""Settlement: what a transfer report (``messages.TransferReport``, from a chain watcher or
test mode) does to the payment whose address it paid.

The report is recorded as a row of ``transfers`` (one per transfer, whatever how often
it is reported); a transfer counts only if it is the payment's own token on the
payment's network, otherwise it is recorded and never counted. A zero-value transfer
(anyone can send one to any address) is not even recorded: it never counts and fires
nothing. Every change to the payment goes through ``transitions.apply``; the state
machine picks what a report does (``report_trigger`` for SEEN and ORPHANED,
``settlement_trigger`` for CONFIRMED).

The settler handles reports in batches, one transaction each, set-based: ``lock_for_reports``
locks the batch's payments and their transfers up front in two round trips and holds them
(``batch.Batch``, out of the ORM's unit of work); ``settle`` then finds them there, changes them in
memory and notes the events of its transitions; just before the transaction commits,
everything the batch changed is written with one statement per table: one INSERT of the
new transfers, one UPDATE of the transfers and one of the payments that changed (each row
only the columns that changed), one COPY of the events into the outbox. A report that
fails rolls the whole transaction back, with nothing written. Without ``lock_for_reports``
(any single report outside the settler) ``settle`` asks for each row and writes it at once.

Reports may arrive twice, late or out of order (a redelivery, a reorg that moves a
transaction): a CONFIRMED transfer is final, an older SEEN report of the same block never
lowers the confirmations shown, and a seen transfer that is orphaned or dropped clears the
detected state it set (``transaction_hash``, ``confirmations``), falling back to another
counted transfer that still stands.

Deep reorg: a CONFIRMED transfer whose block a reorg deeper than the required
confirmations replaced is reported ``reorged`` by the watcher. It is recorded as lost
(status ``REORGED``, not counted), the payment's ``amount_received`` becomes what its
standing confirmed transfers add up to, and ``payment.reorged`` fires with an ERROR log.
The status stays: a delivered order is never silently un-completed; the merchant decides.
``settle`` returns the payment's id then, for its caller (the settler) to flag the payment's
open refunds on that network (``refunds.reorgs``): this package never writes refunds.
Mined again (another block), the transfer is confirmed and counted again.

Wrong network: an EVM payment's address is the same on every EVM network, and the watchers
of the other networks report what reaches it there. Such a transfer never counts; once
confirmed it is recorded on the payment (``Payment.wrong_network``: what, where, how it is
recovered) and fires ``payment.wrong_network``, once per transfer, whatever the status.

Only a payment's own transfers come here: the settler asks first whose the address is
(``payment_at``), and gives a transfer to an address that is no payment's (the chain watchers
also watch the addresses of claimed refunds) to ``refunds.payouts`` instead. This package
never imports the refund package.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.chains.networks import shipped
from kassa_common.messaging import outbox
from kassa_common.messaging.messages import TransferReport
from kassa_common.models import Payment, Transfer
from kassa_common.payments import batch as batches
from kassa_common.payments.batch import Batch, batch_of
from kassa_common.payments.refunded import NONE, may_have_refunds, refund_totals
from kassa_common.payments.transitions import OPEN, Trigger, apply, report_trigger, settlement_trigger
from kassa_common.pricing import arrival
from kassa_common.pricing.amounts import units_text
from kassa_common.pricing.service import RateService
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from kassa_common.transfers import PAYMENT_AND_TOLERANCE, oldest_first, payment_for_address, transfers_of

log = logging.getLogger("kassa.settlement")
SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus


def _columns(model: type) -> list[tuple[str, Any]]:
    """A model's mapped columns: (attribute name, column)."""
    mapper: Any = sa.inspect(model)
    return [(prop.key, prop.columns[0]) for prop in mapper.column_attrs]


_PAYMENT_COLUMNS, _TRANSFER_COLUMNS = _columns(Payment), _columns(Transfer)
_TRANSFERS: sa.Table = Transfer.__table__  # type: ignore[assignment]


def _hold(session: Session, held: Batch, row: Any, columns: list[tuple[str, Any]]) -> None:
    """Take ``row`` out of the session's unit of work, remembering the values it was read with."""
    held.loaded[id(row)] = (row, {key: getattr(row, key) for key, _ in columns})
    session.expunge(row)


def _write_held(session: Session) -> None:
    """Before the batch's commit: write everything its reports changed, one statement per table."""
    held = batches.end(session)
    if held is None:
        return
    if held.new:  # one statement, compiled once: SQLAlchemy sends the rows as one multi-row INSERT
        session.execute(
            _TRANSFERS.insert(), [{column.name: getattr(t, key) for key, column in _TRANSFER_COLUMNS} for t in held.new]
        )
    changed: dict[type, list[tuple[uuid.UUID, dict[str, Any]]]] = {Transfer: [], Payment: []}
    for row, before in held.loaded.values():
        columns = _TRANSFER_COLUMNS if isinstance(row, Transfer) else _PAYMENT_COLUMNS
        now = {column.name: getattr(row, key) for key, column in columns if getattr(row, key) != before[key]}
        if now:
            changed[type(row)].append((row.id, now))
    for model, rows in changed.items():
        if rows:
            _update_rows(session, model.__table__, rows)  # type: ignore[attr-defined]
    if held.events:
        outbox.record_many(session, held.events)


def _update_rows(session: Session, table: sa.Table, rows: list[tuple[uuid.UUID, dict[str, Any]]]) -> None:
    """One UPDATE of ``rows`` (id, {column name: new value}): each row gets only its own
    changes (a column another row changes keeps its value here). Each column's values travel
    as one array of the column's type, beside a flag array saying which rows set it; the
    statement's text depends only on the columns, so PostgreSQL and SQLAlchemy see a few
    shapes again and again, never a statement built for one batch."""
    dialect = session.get_bind().dialect
    names = tuple(sorted({name for _, values in rows for name in values}))
    params: dict[str, Any] = {"ids": [row_id for row_id, _ in rows]}
    for i, name in enumerate(names):
        bind = _bind_processor(table.c[name], dialect)
        params[f"v{i}"] = [bind(values[name]) if name in values else None for _, values in rows]
        params[f"s{i}"] = [name in values for _, values in rows]
    session.execute(_update_statement(table, names, dialect), params)


@functools.lru_cache(maxsize=256)  # a bound, not a behaviour  # pragma: no mutate
def _update_statement(table: sa.Table, names: tuple[str, ...], dialect: Any) -> sa.TextClause:
    """``_update_rows``'s statement for these columns (a few shapes, each built once)."""
    arrays = [f"CAST(:ids AS {table.c.id.type.compile(dialect)}[])"]
    for i, name in enumerate(names):
        arrays += [f"CAST(:v{i} AS {table.c[name].type.compile(dialect)}[])", f"CAST(:s{i} AS boolean[])"]
    columns = ["id"] + [f"v{i}, s{i}" for i in range(len(names))]
    sets = [f'"{name}" = CASE WHEN v.s{i} THEN v.v{i} ELSE t."{name}" END' for i, name in enumerate(names)]
    return sa.text(
        f"UPDATE {table.name} AS t SET {', '.join(sets)} "
        f"FROM unnest({', '.join(arrays)}) AS v({', '.join(columns)}) WHERE t.id = v.id"
    )


@functools.cache
def _bind_processor(column: sa.Column[Any], dialect: Any) -> Callable[[Any], Any]:
    """How one value of ``column`` goes to the driver (JSONB serialised as the ORM would)."""
    process = column.type.bind_processor(dialect)
    return (lambda v: None if v is None else process(v)) if process else (lambda v: v)


def lock_for_reports(session: Session, reports: Iterable[TransferReport]) -> None:
    """Lock, in two round trips, the payments these reports pay and all their transfers, for
    ``settle`` to find in the session instead of asking once per report (and, in a third, the
    refunds of those that had confirmed funds already, for their events). Payments are locked
    in id order, then their transfers (the sweeper's order too), so two settlers holding
    batches never deadlock over them."""
    held = batch_of(session)
    addresses = {r.to.lower() for r in reports} - set(held.payments if held else ())
    if not addresses:
        return
    if held is None:
        held = batches.begin(session, _write_held)
    rows = session.execute(
        PAYMENT_AND_TOLERANCE.where(sa.func.lower(Payment.address).in_(addresses))
        .order_by(Payment.id)
        .with_for_update(of=Payment)
        .execution_options(populate_existing=True)  # pragma: no mutate
    ).all()
    held.payments.update(dict.fromkeys(addresses))
    for payment, tolerance in rows:
        held.payments[payment.address.lower()] = (payment, tolerance or Decimal(0))
        held.transfers[payment.id] = []
    if rows:
        for t in session.scalars(
            sa.select(Transfer)
            .where(Transfer.payment_id.in_([p.id for p, _ in rows]))
            .order_by(Transfer.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        ):  # pragma: no mutate
            held.transfers[t.payment_id].append(t)
        _hold_refunds(session, held, [p.id for p, _ in rows])
        for payment, _ in rows:
            _hold(session, held, payment, _PAYMENT_COLUMNS)
            for t in held.transfers[payment.id]:
                _hold(session, held, t, _TRANSFER_COLUMNS)


def _hold_refunds(session: Session, held: Batch, payment_ids: list[uuid.UUID]) -> None:
    """The refund totals of the batch's payments, read once (only of those that may have any),
    so their events in this transaction do not ask per payment. Valid for the transaction: a
    refund is only made under its payment's lock."""
    maybe = [pid for pid in payment_ids if may_have_refunds(held.transfers[pid])]
    found = refund_totals(session, maybe)  # none asked: no query
    for pid in payment_ids:
        held.refunds[pid] = found.get(pid, NONE)


def payment_at(session: Session, address: str) -> tuple[Payment, Decimal] | None:
    """The payment a transfer to ``address`` pays, locked, with its merchant's underpayment
    tolerance (None: no payment's): held since ``lock_for_reports``, else read
    (``transfers.payment_for_address``). The settler asks this first, to give the report to
    ``settle`` or to the refund package."""
    held = batch_of(session)
    if held is not None and address.lower() in held.payments:
        return held.payments[address.lower()]
    return payment_for_address(session, address)


def _locked_transfer(session: Session, payment: Payment, r: TransferReport) -> Transfer | None:
    held = batch_of(session)
    if held is not None and payment.id in held.transfers:
        return next(
            (
                t
                for t in held.transfers[payment.id]
                if (t.network, t.tx_hash, t.position) == (r.network, r.tx_hash, r.place)
            ),
            None,
        )
    return session.scalars(
        sa.select(Transfer)
        .where(
            Transfer.network == r.network,
            Transfer.tx_hash == r.tx_hash,
            Transfer.payment_id == payment.id,
            Transfer.position == r.place,
        )
        .with_for_update()
        .execution_options(populate_existing=True)  # pragma: no mutate
    ).first()


def _transfers(session: Session, payment: Payment) -> list[Any]:
    """The payment's transfers, oldest first (``queries.TRANSFER_ORDER``)."""
    held = batch_of(session)
    if held is not None and payment.id in held.transfers:
        return oldest_first(held.transfers[payment.id])
    session.flush()  # a transfer's new status, before they are read
    return transfers_of(session, [payment.id])[payment.id]


def _upsert_transfer(session: Session, payment: Payment, r: TransferReport) -> tuple[Transfer, str | None]:
    """Record the report; return the transfer and its status before this report (None if new).

    A transfer is what it is: (network, tx hash, payment, place inside the transaction),
    unique in the table. A reorg that moves its transaction to another block at another
    log index reports the same transfer again; the row follows it to its new block.
    """
    now = utcnow()
    transfer = _locked_transfer(session, payment, r)  # a transfer reported before: one round trip
    held = batch_of(session)
    if transfer is None and held is not None and payment.id in held.transfers:
        new = Transfer(id=uuid.uuid4(), exchange_rate=None, sweep_id=None, **_new_transfer(payment, r, now))
        held.transfers[payment.id].append(new)  # a second report of it in this batch finds it
        held.new.append(new)
        return new, None
    if transfer is None:
        inserted = session.scalars(
            pg_insert(Transfer).values(**_new_transfer(payment, r, now)).on_conflict_do_nothing().returning(Transfer),
            execution_options={"populate_existing": True},  # a new row: nothing to refresh  # pragma: no mutate
        ).first()
        if inserted is not None:
            return inserted, None
        transfer = _locked_transfer(session, payment, r)  # inserted meanwhile by another settler
        assert transfer is not None  # pragma: no mutate
    before = transfer.status
    if r.status in (ORPHANED, REORGED) and transfer.block_hash is not None and r.block_hash != transfer.block_hash:
        return transfer, before  # the block it left, reported after the one it moved to: no news
    if before == REORGED and r.block_hash == transfer.block_hash:
        return transfer, before  # a late report of the block it was lost with
    if before == CONFIRMED:  # final: never orphaned or re-counted; lost only in a reorg past the line
        if r.status == REORGED:
            transfer.status, transfer.updated_at = REORGED, now
            _flush(session)
        elif r.status == CONFIRMED and r.block_hash != transfer.block_hash:
            _moved(session, transfer, r, now)  # confirmed again in the block a deep reorg moved it to
        return transfer, before
    older = r.confirmations < transfer.confirmations  # as many: the same values again  # pragma: no mutate
    if r.status == SEEN == before and r.block_hash == transfer.block_hash and older:
        return transfer, before  # an older report of the same block, delivered late
    transfer.status = r.status
    transfer.confirmations = r.confirmations
    _moved(session, transfer, r, now)
    return transfer, before


def _new_transfer(payment: Payment, r: TransferReport, now: datetime) -> dict[str, Any]:
    """The columns of the transfer a report records for the first time."""
    return {
        "payment_id": payment.id,
        "network": r.network,
        "tx_hash": r.tx_hash,
        "log_index": r.log_index,
        "position": r.place,
        "token": r.token,
        "amount_units": r.amount_units,
        "status": r.status,
        "counted": r.network == payment.network and r.token == payment.token,
        "block_number": r.block_number,
        "block_hash": r.block_hash,
        "confirmations": r.confirmations,
        "late": payment.status not in OPEN,
        "sweep_due": payment.settlement_address is not None and not payment.test_mode,  # a forwarder deposit
        "created_at": now,
        "updated_at": now,
    }


def _flush(session: Session) -> None:
    """Write a transfer's change now, unless a batch holds it (written before its commit)."""
    if batch_of(session) is None:
        session.flush()


def _moved(session: Session, transfer: Transfer, r: TransferReport, now: datetime) -> None:
    transfer.block_number, transfer.block_hash, transfer.log_index = r.block_number, r.block_hash, r.log_index
    transfer.updated_at = now
    _flush(session)


def confirmed_total(transfers: list[Any]) -> int:
    """What the payment's counted, confirmed transfers add up to (rows of ``transfers_of``)."""
    return sum(int(t.amount_units) for t in transfers if t.counted and t.status == CONFIRMED)


def settle(session: Session, r: TransferReport, rates: RateService | None = None) -> uuid.UUID | None:
    """Apply one transfer report to its payment. Idempotent for the same report. ``rates``:
    values funds arriving after the payment's rate lock, or confirming long after it
    (``pricing.arrival``), from its cache only: a rate it lacks raises ``RateNotCached``
    (fetched outside the transaction, then the report is settled again). Returns the
    payment's id when this report lost it confirmed funds in a deep reorg (once per loss:
    the caller flags its open refunds), else None."""
    if r.amount_units <= 0:
        log.info("zero-value transfer %s:%s to %s ignored", r.tx_hash, r.log_index, r.to)
        return None
    found = payment_at(session, r.to)
    if found is None:
        log.info("transfer %s:%s to %s pays no payment", r.tx_hash, r.log_index, r.to)
        return None
    payment, tolerance = found
    transfer, before = _upsert_transfer(session, payment, r)
    if before is None and transfer.counted and payment.status in OPEN:
        transfer.exchange_rate = arrival.rate_at_arrival(rates, payment, transfer.created_at)
    if r.status == REORGED and before == CONFIRMED and transfer.status == REORGED:
        _record_reorg(session, payment, transfer)
        return payment.id
    if transfer.status != r.status:
        return None  # a report the transfer's record already outran (see _upsert_transfer)
    if r.network != payment.network and r.status == CONFIRMED and before not in (CONFIRMED, REORGED):
        _record_wrong_network(session, payment, transfer)
        return None
    if not transfer.counted:
        return None  # recorded, never counted (another token or network)
    if r.status == CONFIRMED:
        if before != CONFIRMED:
            if payment.status in OPEN:  # held unconfirmed past its rate's hold: the rate of now
                late = arrival.rate_at_confirmation(rates, payment, transfer, utcnow())
                transfer.exchange_rate = late if late is not None else transfer.exchange_rate
            _count_confirmed(session, payment, transfer, tolerance)
        return None
    _follow_unconfirmed(session, payment, transfer, r.status, before)
    return None


def _follow_unconfirmed(
    session: Session, payment: Payment, transfer: Transfer, status: TransferStatus, before: str | None
) -> None:
    """A counted transfer seen, orphaned or reorged before it was confirmed: the payment
    detects it, follows its confirmations, or lets it go."""
    trigger = report_trigger(status, before, payment.status)
    shown = payment.transaction_hash == transfer.tx_hash  # the transfer the payment shows as detected
    if trigger == Trigger.DETECT:
        apply(
            session,
            payment,
            trigger,
            transfers=_transfers(session, payment),
            transaction_hash=transfer.tx_hash,
            confirmations=transfer.confirmations,
        )
    elif trigger == Trigger.OBSERVE and shown and payment.confirmations != transfer.confirmations:
        apply(session, payment, trigger, confirmations=transfer.confirmations)
    elif trigger == Trigger.RELEASE and shown:
        standing = _still_standing(session, payment.id)
        apply(
            session,
            payment,
            trigger,
            transaction_hash=standing.tx_hash if standing else None,
            confirmations=standing.confirmations if standing else 0,
        )


def wrong_network_entry(payment: Payment, transfer: Transfer) -> dict[str, Any]:
    """How ``PaymentOut.wrong_network`` shows a transfer confirmed on another network:
    ``recovery`` is ``sweep`` (a forwarder deposit: the sweeper of that network moves it to
    the settlement address) or ``wallet`` (an xpub address: already in the merchant's wallet)."""
    network = shipped().get(transfer.network)
    token = network.token(transfer.token) if network else None
    amount = units_text(int(transfer.amount_units), token.decimals) if token else str(transfer.amount_units)
    return {
        "network": transfer.network,
        "token": transfer.token,
        "amount": amount,
        "transaction_hash": transfer.tx_hash,
        "log_index": transfer.log_index,
        "recovery": "sweep" if payment.settlement_address else "wallet",
    }


def _record_wrong_network(session: Session, payment: Payment, transfer: Transfer) -> None:
    entry = wrong_network_entry(payment, transfer)
    apply(
        session,
        payment,
        Trigger.RECORD_WRONG_NETWORK,
        transfers=_transfers(session, payment),
        wrong_network=[*(payment.wrong_network or []), entry],
    )


def _record_reorg(session: Session, payment: Payment, transfer: Transfer) -> None:
    """A confirmed transfer was lost in a deep reorg: recorded, ``payment.reorged``, status kept."""
    transfers = _transfers(session, payment)
    changes: dict[str, Any] = {"amount_received_units": confirmed_total(transfers)} if transfer.counted else {}
    if payment.transaction_hash == transfer.tx_hash:
        standing = _still_standing(session, payment.id)
        changes.update(
            transaction_hash=standing.tx_hash if standing else None,
            confirmations=standing.confirmations if standing else 0,
        )
    log.error(
        "payment %s (%s): confirmed transfer %s on %s lost in a reorg deeper than the required "
        "confirmations; payment.reorged fired",
        payment.id,
        payment.status,
        transfer.tx_hash,
        transfer.network,
    )
    apply(session, payment, Trigger.RECORD_REORG, transfers=transfers, **changes)


def _still_standing(session: Session, payment_id: uuid.UUID) -> Transfer | None:
    """The counted transfer a payment shows once the one it showed is gone: the latest one
    still seen (it holds the payment open), else the latest confirmed one."""
    held = batch_of(session)
    if held is not None and payment_id in held.transfers:
        standing = [t for t in held.transfers[payment_id] if t.counted and t.status in (SEEN, CONFIRMED)]
        standing.sort(key=lambda t: str(t.id))
        standing.sort(key=lambda t: (t.status == SEEN, t.created_at), reverse=True)
        return standing[0] if standing else None
    return session.scalars(
        sa.select(Transfer)
        .where(Transfer.payment_id == payment_id, Transfer.counted, Transfer.status.in_((SEEN, CONFIRMED)))
        .order_by((Transfer.status == SEEN).desc(), Transfer.created_at.desc(), Transfer.id)
        .limit(1)  # pragma: no mutate
    ).first()


def _count_confirmed(session: Session, payment: Payment, transfer: Transfer, tolerance: Decimal) -> None:
    transfers = _transfers(session, payment)  # the total, and the event's payload
    received = confirmed_total(transfers)
    valued = arrival.valued_units(payment, transfers)  # funds after the rate lock at their arrival's rate
    trigger = settlement_trigger(payment.status, valued, int(payment.crypto_amount_units), tolerance)
    repriced = arrival.latest_arrival_rate(transfers)
    shown: dict[str, Any] = (
        {"arrival_exchange_rate": repriced} if repriced is not None else {}
    )  # beside the locked rate
    if trigger == Trigger.RECORD_OVERPAYMENT:  # paid again after completion: show the surplus
        apply(session, payment, trigger, transfers=transfers, amount_received_units=received, **shown)
    else:
        apply(
            session,
            payment,
            trigger,
            transfers=transfers,
            amount_received_units=received,
            confirmations=transfer.confirmations,
            transaction_hash=transfer.tx_hash,
            **shown,
        )
