"""The payment object (``shape.payment_to_dict``) is built as a plain dict, without running
``PaymentOut``'s validation for every payment. Its output must be exactly what validating
through ``PaymentOut`` and dumping gives: same keys in the same order, same values of the
same types, so the same JSON bytes. The oracle below is that validating path.
Pure logic: no database."""

from __future__ import annotations

import json
import uuid
from collections import namedtuple
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from kassa_common.models import Payment
from kassa_common.payments import queries, shape
from kassa_common.payments.refunded import NONE
from kassa_common.payments.shape import PaymentOut, TransferOut
from kassa_common.statuses import PaymentStatus, TransferStatus
from kassa_common.timefmt import iso
from kassa_common.transfers import TRANSFER_COLUMNS


def payment_to_dict(p, transfers):
    """The object of a payment without refunds."""
    return shape.payment_to_dict(p, transfers, NONE)


T0 = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
TransferRow = namedtuple("TransferRow", [c.key for c in TRANSFER_COLUMNS])


def refundable(p, transfers) -> str:
    """Confirmed funds of the payment's token on any network it is a token of (no refunds)."""
    total = Decimal(0)
    for t in transfers:
        decimals = shape._decimals(p, t.network, t.token)
        if t.status == "CONFIRMED" and t.token == p.token and decimals is not None:
            total += Decimal(int(t.amount_units)).scaleb(-decimals)
    return shape.plain(total)


def validated(p, transfers) -> dict:
    """The payment object through ``PaymentOut``'s validation (the oracle)."""

    def transfer(t):
        decimals = shape._decimals(p, t.network, t.token)
        reason = shape._not_counted_because(p, t)
        return TransferOut(
            network=t.network,
            token=t.token,
            tx_hash=t.tx_hash,
            log_index=t.log_index,
            amount=(shape.units_text(t.amount_units, decimals) if decimals is not None else str(int(t.amount_units))),
            confirmations=t.confirmations,
            status=t.status,
            counted=reason is None,
            reason=reason,
            late=t.late,
            created_at=iso(t.created_at),
        ).model_dump()

    return PaymentOut(
        id=str(p.id),
        short_id=p.short_id,
        status=p.status,
        amount=shape.usd(p.amount),
        currency=p.currency,
        token=p.token,
        network=p.network,
        address=p.address,
        crypto_amount=shape.units_text(p.crypto_amount_units, p.decimals),
        amount_received=shape.units_text(p.amount_received_units, p.decimals),
        refunded_amount="0",
        refundable_amount=refundable(p, transfers),
        exchange_rate=shape.plain(p.exchange_rate),
        rate_source=p.rate_source,
        rate_locked_until=iso(p.rate_locked_until or p.expires_at),
        arrival_exchange_rate=shape.plain(p.arrival_exchange_rate) if p.arrival_exchange_rate is not None else None,
        confirmations=p.confirmations,
        required_confirmations=p.required_confirmations,
        transaction_hash=p.transaction_hash,
        checkout_url=p.checkout_url,
        customer_email=p.customer_email,
        customer_name=p.customer_name,
        redirect_url=p.redirect_url,
        cancel_url=p.cancel_url,
        product_id=str(p.product_id) if p.product_id else None,
        metadata=p.metadata_,
        test_mode=p.test_mode,
        expires_at=iso(p.expires_at),
        created_at=iso(p.created_at),
        updated_at=iso(p.updated_at),
        completed_at=iso(p.completed_at),
        settlement_address=p.settlement_address,
        sweep_transaction_hash=p.sweep_tx_hash,
        swept_at=iso(p.swept_at),
        wrong_network=p.wrong_network or [],
        transfers=[transfer(t) for t in transfers],
    ).model_dump()


def typed(value):
    """``value`` with the type of every leaf, so ``1 == 1.0 == True`` cannot pass for equal."""
    if isinstance(value, dict):
        return [(k, typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [typed(v) for v in value]
    return type(value), value


def payment(**fields) -> Payment:
    base = {
        "id": uuid.uuid4(),
        "short_id": "K7QX2MZP9A",
        "merchant_id": uuid.uuid4(),
        "test_mode": True,
        "status": "PENDING",
        "amount": Decimal("10.00"),
        "token": "USDC",
        "network": "BASE",
        "decimals": 6,
        "address": "0x" + "ab" * 20,
        "checkout_url": "https://pay.example.com/pay/K7QX2MZP9A",
        "crypto_amount_units": Decimal(10_000_000),
        "amount_received_units": Decimal(0),
        "exchange_rate": Decimal("1.000000000000000000"),
        "confirmations": 0,
        "required_confirmations": 2,
        "transaction_hash": None,
        "customer_email": None,
        "customer_name": None,
        "redirect_url": None,
        "cancel_url": None,
        "product_id": None,
        "metadata_": {},
        "expires_at": T0 + timedelta(minutes=30),
        "created_at": T0,
        "updated_at": T0,
        "completed_at": None,
        "settlement_address": None,
        "sweep_tx_hash": None,
        "swept_at": None,
        "wrong_network": [],
        "currency": "USD",
        "rate_source": "fixed",
        "rate_locked_until": None,
        "arrival_exchange_rate": None,
    }
    return Payment(**{**base, **fields})


def transfer(**fields) -> TransferRow:
    base = {
        "payment_id": None,
        "network": "BASE",
        "token": "USDC",
        "tx_hash": "0x" + "cd" * 32,
        "log_index": 3,
        "amount_units": Decimal(4_000_000),
        "confirmations": 5,
        "status": "CONFIRMED",
        "counted": True,
        "late": False,
        "created_at": T0 + timedelta(seconds=5),
        "exchange_rate": None,
    }
    return TransferRow(**{**base, **fields})


WRONG = {  # as JSONB gives it back: keys by length, then bytes
    "token": "USDT",
    "amount": "3.5",
    "network": "POLYGON",
    "recovery": "wallet",
    "log_index": 7,
    "transaction_hash": "0x" + "ef" * 32,
}

CASES = {
    "a new test payment": (payment(), []),
    "every optional field set, an enum status, nested metadata": (
        payment(
            status=PaymentStatus.COMPLETED,
            test_mode=False,
            amount=Decimal("1234.5"),
            currency="EUR",
            token="ETH",
            network="ETHEREUM",
            rate_source="ETH/USD median of coinbase, kraken; EUR/USD median of coinbase, kraken",
            rate_locked_until=T0 + timedelta(minutes=15),
            arrival_exchange_rate=Decimal("2950.100000000000000000"),
            decimals=18,
            crypto_amount_units=Decimal(411_500_000_000_000_000),
            amount_received_units=Decimal(411_500_000_000_000_001),
            exchange_rate=Decimal("3000.000000000000000000"),
            confirmations=12,
            required_confirmations=12,
            transaction_hash="0x" + "12" * 32,
            customer_email="ana@example.com",
            customer_name="Ana Ñúñez",
            redirect_url="https://shop.example.com/ok",
            cancel_url="https://shop.example.com/cancel",
            product_id=uuid.uuid4(),
            metadata_={"order": "A-1", "n": 3, "x": 1.5, "ok": True, "none": None, "tags": ["a", {"b": [1, 2]}]},
            completed_at=T0 + timedelta(minutes=3),
            settlement_address="0x" + "99" * 20,
            sweep_tx_hash="0x" + "77" * 32,
            swept_at=T0 + timedelta(hours=1),
            expires_at=datetime(2026, 3, 1, 11, 0, 0, 999999, tzinfo=timezone(timedelta(hours=2))),
            wrong_network=[WRONG, {**WRONG, "recovery": "sweep", "log_index": -1}],
        ),
        [
            transfer(amount_units=Decimal(411_500_000_000_000_001), token="ETH", network="ETHEREUM", log_index=-1),
            transfer(token="USDC", network="ETHEREUM", status="SEEN", counted=False, late=True),
            transfer(token="NOPE", network="ETHEREUM", counted=False, amount_units=Decimal(77)),
            transfer(network="NOWHERE", token="ETH", counted=False),
            transfer(token="ETH", network="ETHEREUM", status=TransferStatus.ORPHANED, log_index=-1),
        ],
    ),
    "partly paid, then expired": (
        payment(
            status="EXPIRED", amount_received_units=Decimal(4_000_000), exchange_rate=Decimal("0.500000000000000000")
        ),
        [transfer(), transfer(status="ORPHANED", tx_hash="0x" + "00" * 32)],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_payment_object_is_what_validating_through_the_model_gives(case):
    p, transfers = CASES[case]
    built, oracle = payment_to_dict(p, transfers), validated(p, transfers)
    assert typed(built) == typed(oracle)
    assert json.dumps(built) == json.dumps(oracle)


def test_the_payment_object_has_the_models_fields_in_its_order():
    p, transfers = CASES["every optional field set, an enum status, nested metadata"]
    built = payment_to_dict(p, transfers)
    assert list(built) == list(PaymentOut.model_fields)
    assert all(list(t) == list(TransferOut.model_fields) for t in built["transfers"])
    assert PaymentOut.model_validate(built).model_dump() == built


def test_a_plain_row_gives_the_same_object_as_the_orm_payment():
    p, transfers = CASES["every optional field set, an enum status, nested metadata"]
    keys = [c.key for c in queries.PAYMENT_COLUMNS]
    row = namedtuple("PaymentRow", keys)(*(getattr(p, k) for k in keys))
    assert json.dumps(payment_to_dict(row, transfers)) == json.dumps(payment_to_dict(p, transfers))


def test_changing_the_object_leaves_the_payment_alone():
    p = payment(metadata_={"order": {"lines": [1]}}, wrong_network=[dict(WRONG)])
    built = payment_to_dict(p, [])
    built["metadata"]["order"]["lines"].append(2)
    built["wrong_network"][0]["amount"] = "0"
    assert p.metadata_ == {"order": {"lines": [1]}} and p.wrong_network == [WRONG]
