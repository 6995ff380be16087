"""Creating a payment: pricing, the idempotency claim, the receiving address, the row and
its ``payment.created`` event (API and product page alike).

A create makes two round trips: one statement reads what it needs (the merchant's wallet,
an earlier request with the same Idempotency-Key and, usually, the address index: see
``addresses.index_hint``), then one statement claims the key, inserts the payment and
inserts its event. That statement is atomic on its own, so the API runs it outside any
transaction (autocommit) and the product page inside its own; the event is written with
the payment either way (outbox). Both are prepared once per connection (``db.Prepared``),
and the answer and the event are built once, from the same payment object, before the
write.

The claim is the key's row, written by the statement that writes the payment: a
concurrent duplicate waits on the unique key until the first commits, then finds the
row and replays its payment. So one payment per key. An expired key (older than the
TTL) is taken over by the next request as if new.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, NamedTuple

from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from kassa_common import idempotency, urls
from kassa_common.chains.hd import TEST_XPUBS
from kassa_common.chains.networks import Network, Registry, Token
from kassa_common.db import Prepared
from kassa_common.errors import (
    DomainError,
    IdempotencyConflict,
    InvalidCurrency,
    ProductUnavailable,
    RateNotAvailable,
    UnsupportedPair,
)
from kassa_common.ids import new_short_id, parse_uuid
from kassa_common.messaging.messages import EventType
from kassa_common.models import Payment
from kassa_common.owner import Owner
from kassa_common.payments.addresses import index_hint, receiving_address
from kassa_common.payments.events import payment_event
from kassa_common.payments.queries import payment_object
from kassa_common.payments.shape import PaymentRow
from kassa_common.pricing import RateService, RateUnavailable, Unpriced, currencies, terms
from kassa_common.pricing.service import Quote
from kassa_common.statuses import PaymentStatus
from kassa_common.timefmt import utcnow

# The statements below are written for psycopg2 (its parameter style) and go to it as they
# are; those of every create are prepared once per connection.

PRODUCT = """
SELECT id, merchant_id, test_mode, deleted_at, active, currency_type, currency, token, network, price
FROM products WHERE id = %(id)s
"""

# What a create reads, in one statement: the merchant's wallet for the chain and pricing
# terms, an unexpired earlier request with this key and, when the wallet's key is the one expected (``index_hint``)
# and no earlier request holds the key, the key's next index.
WALLET_AND_KEY = Prepared(
    "kassa_create_read",
    """
SELECT w.xpub, w.settlement_address, k.request_hash, k.payment_id,
       CASE WHEN k.key IS NULL AND w.settlement_address IS NULL
                 AND coalesce(w.xpub, %(default_key)s) = %(expected_key)s
            THEN nextval(%(sequence)s::regclass) END AS derivation_index,
       m.rate_spread_pct, m.rate_lock_minutes
FROM (VALUES (1)) AS one
JOIN merchants m ON m.id = %(merchant_id)s
LEFT JOIN wallets w ON w.merchant_id = %(merchant_id)s AND w.mode = %(mode)s AND w.chain = %(chain)s
LEFT JOIN idempotency_keys k ON k.merchant_id = %(merchant_id)s AND k.test_mode = %(test_mode)s
                            AND k.key = %(key)s AND k.created_at >= %(fresh_after)s
""",
    {
        "merchant_id": "uuid",
        "mode": "text",
        "chain": "text",
        "test_mode": "boolean",
        "key": "text",
        "fresh_after": "timestamptz",
        "default_key": "text",
        "expected_key": "text",
        "sequence": "text",
    },
)

EARLIER_REQUEST = """
SELECT request_hash, payment_id FROM idempotency_keys
WHERE merchant_id = %(merchant_id)s AND test_mode = %(test_mode)s AND key = %(key)s AND created_at >= %(fresh_after)s
"""

# Claim the key (when there is one: a new row, or an expired one taken over), then only if
# claimed insert the payment and its event. Returns a row, or none when another request holds
# the key. ``created_block``: where the network's watcher stands (NULL before it
# first ran; none in test mode): no transfer to a new address can be in a block it had already
# scanned, so a late address is backfilled from there (``kassa_chain_watcher.scanner``).
# ``watch_points``: where every network's watcher stands, for those that watch the address on
# other networks (wrong network) and backfill it from their own height.
INSERT_PAYMENT = Prepared(
    "kassa_create_write",
    """
WITH claim AS (
    INSERT INTO idempotency_keys AS k (merchant_id, test_mode, key, request_hash, response_status, payment_id,
                                       created_at)
    SELECT %(merchant_id)s, %(test_mode)s, %(key)s, %(request_hash)s, 201, %(id)s, %(created_at)s
    WHERE %(key)s IS NOT NULL
    ON CONFLICT (merchant_id, test_mode, key) DO UPDATE
        SET request_hash = excluded.request_hash, response_status = 201, payment_id = excluded.payment_id,
            created_at = excluded.created_at
        WHERE k.created_at < %(fresh_after)s
    RETURNING 1
), payment AS (
    INSERT INTO payments (id, short_id, merchant_id, test_mode, status, amount, token, network, decimals, address,
                          derivation_index, settlement_address, deposit_salt, checkout_url, crypto_amount_units,
                          amount_received_units, exchange_rate, confirmations, required_confirmations,
                          customer_email, customer_name, redirect_url, cancel_url, product_id, metadata,
                          expires_at, created_at, updated_at, created_block, watch_points, currency, rate_source,
                          rate_locked_until, rate_spread_pct)
    SELECT %(id)s, %(short_id)s, %(merchant_id)s, %(test_mode)s, %(status)s, %(amount)s, %(token)s, %(network)s,
           %(decimals)s, %(address)s, %(derivation_index)s, %(settlement_address)s, %(deposit_salt)s,
           %(checkout_url)s, %(crypto_amount_units)s, 0, %(exchange_rate)s, 0, %(required_confirmations)s,
           %(customer_email)s, %(customer_name)s, %(redirect_url)s, %(cancel_url)s, %(product_id)s, %(metadata)s,
           %(expires_at)s, %(created_at)s, %(created_at)s,
           CASE WHEN NOT %(test_mode)s THEN (SELECT block_number FROM chain_cursors WHERE network = %(network)s) END,
           coalesce(CASE WHEN NOT %(test_mode)s THEN (SELECT jsonb_object_agg(network, block_number)
                                                      FROM chain_cursors) END, '{}'),
           %(currency)s, %(rate_source)s, %(rate_locked_until)s, %(rate_spread_pct)s
    WHERE %(key)s IS NULL OR EXISTS (SELECT FROM claim)
    RETURNING id
)
INSERT INTO events (id, type, merchant_id, test_mode, payment_id, payload, created_at)
SELECT %(event_id)s, %(event_type)s, %(merchant_id)s, %(test_mode)s, id, %(payload)s, %(created_at)s FROM payment
RETURNING true
""",
    {
        "key": "text",
        "request_hash": "text",
        "fresh_after": "timestamptz",
        "id": "uuid",
        "short_id": "text",
        "merchant_id": "uuid",
        "test_mode": "boolean",
        "status": "text",
        "amount": "numeric",
        "token": "text",
        "network": "text",
        "decimals": "smallint",
        "address": "text",
        "derivation_index": "bigint",
        "settlement_address": "text",
        "deposit_salt": "text",
        "checkout_url": "text",
        "crypto_amount_units": "numeric",
        "exchange_rate": "numeric",
        "required_confirmations": "integer",
        "customer_email": "text",
        "customer_name": "text",
        "redirect_url": "text",
        "cancel_url": "text",
        "product_id": "uuid",
        "metadata": "jsonb",
        "expires_at": "timestamptz",
        "created_at": "timestamptz",
        "event_id": "text",
        "event_type": "text",
        "payload": "jsonb",
        "currency": "text",
        "rate_source": "text",
        "rate_locked_until": "timestamptz",
        "rate_spread_pct": "numeric",
    },
)


class ReadForCreate(NamedTuple):
    """The row of ``WALLET_AND_KEY``."""

    xpub: str | None
    settlement_address: str | None
    request_hash: str | None  # of an earlier request with the key
    payment_id: uuid.UUID | None  # the earlier request's payment
    derivation_index: int | None  # taken from the expected key's sequence
    rate_spread_pct: Decimal  # the merchant's pricing terms (pricing.terms)
    rate_lock_minutes: int | None


@dataclass(frozen=True)
class NewPayment:
    token: str
    network: str
    amount: Decimal | None = None
    currency: str | None = None  # ISO 4217; None: USD, or a FIAT product's own
    product_id: str | None = None
    customer_email: str | None = None
    customer_name: str | None = None
    redirect_url: str | None = None
    cancel_url: str | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Created:
    """What a create answers: the payment object (``shape.PaymentOut``, as the API and the
    payment.created event show it), and whether it is an earlier request's payment, replayed
    for the same Idempotency-Key."""

    payment: dict[str, Any]
    replayed: bool


def resolve_pair(registry: Registry, network_name: str, token_symbol: str, test_mode: bool) -> tuple[Network, Token]:
    network = registry.get(network_name)
    token = network.token(token_symbol) if network else None
    if network is None or token is None:
        raise UnsupportedPair(
            f"{token_symbol} on {network_name} is not supported; GET /v1/api/networks lists the pairs",
            [{"field": "network" if network is None else "token", "message": "unsupported"}],
        )
    if not test_mode and not network.live_enabled:
        raise UnsupportedPair(f"{network.name} is not enabled for live payments on this server")
    return network, token


def payment_currency(cmd: NewPayment, product: Any) -> str:
    """The payment's currency: a FIAT product's own (a request naming another is refused), else
    the request's, USD by default."""
    try:
        asked = currencies.normalise(cmd.currency) if cmd.currency is not None else None
    except currencies.UnknownCurrency as exc:
        raise InvalidCurrency(str(exc), [{"field": "currency", "message": str(exc)}]) from None
    if product is not None and product.currency_type == "FIAT":
        if asked is not None and asked != product.currency:
            raise InvalidCurrency(
                f"this product is priced in {product.currency}",
                [{"field": "currency", "message": f"the product's currency is {product.currency}"}],
            )
        return str(product.currency)
    if cmd.amount is not None and asked is not None and not currencies.fits(cmd.amount, asked):
        places = currencies.minor_units(asked)
        raise InvalidCurrency(
            f"an amount in {asked} has at most {places} decimal places",
            [{"field": "amount", "message": f"at most {places} decimal places in {asked}"}],
        )
    return asked or currencies.DEFAULT


def quote(rates: RateService, symbol: str, currency: str, test_mode: bool) -> Quote:
    """The market (or, in test mode, fixed) price of one token in the currency; 503 rather than a guess."""
    try:
        return rates.quote(symbol, currency, live=not test_mode)
    except Unpriced as exc:
        raise InvalidCurrency(
            f"{currency} is not priced by this server's rate sources ({exc})",
            [{"field": "currency", "message": "no rate for this currency"}],
        ) from None
    except RateUnavailable as exc:  # too few sources, or none for this token: never a guess
        raise RateNotAvailable(str(exc), retry_after=getattr(exc, "retry_after", 30)) from exc


def price(cmd: NewPayment, product: Any, token: Token, q: Quote, currency: str, spread_pct: Decimal) -> terms.Priced:
    """``product``: a row of ``PRODUCT``, or None for a payment of ``cmd.amount``."""
    if product is not None and product.currency_type == "CRYPTO":
        return terms.price_units(product.price, currency, q.rate, token.decimals)
    amount = currencies.rounded(product.price, currency) if product is not None else cmd.amount
    assert amount is not None
    return terms.price_amount(amount, currency, q.rate, token.decimals, spread_pct)


def chargeable_product(conn: Connection, owner: Owner, product_id: str, network: str, token: str) -> Any:
    pid = parse_uuid(product_id)
    product = conn.exec_driver_sql(PRODUCT, {"id": pid}).first() if pid else None
    if (
        product is None
        or product.merchant_id != owner.merchant_id
        or product.test_mode != owner.test_mode
        or product.deleted_at is not None
        or not product.active
    ):
        raise ProductUnavailable(
            "the product does not exist or is not active", [{"field": "product_id", "message": "not available"}]
        )
    if product.currency_type == "CRYPTO" and (product.network != network or product.token != token):
        raise UnsupportedPair(f"this product is priced in {product.token} on {product.network}; pay with that pair")
    return product


def request_hash(cmd: NewPayment) -> str:
    """The create as its Idempotency-Key remembers it: the fields given (amounts as text)."""
    return idempotency.request_hash(
        {k: (str(v) if isinstance(v, Decimal) else v) for k, v in cmd.__dict__.items() if v is not None}
    )


def create_payment(
    db: Connection | Session,
    owner: Owner,
    cmd: NewPayment,
    *,
    registry: Registry,
    rates: RateService,
    checkout_base: str,
    idempotency_key: str | None = None,
    idempotency_ttl: timedelta = timedelta(hours=24),
    allow_test_keys: bool = False,
) -> Created:
    """Create a PENDING payment and its payment.created event, or replay the payment an
    earlier request with the same ``idempotency_key`` and body made.

    ``db``: a connection in autocommit mode (the create is then its own transaction), or a
    session whose transaction the create joins. ``allow_test_keys``: a live payment may
    derive from a published test key (development).
    """
    conn = db.connection() if isinstance(db, Session) else db
    now = utcnow()
    key = idempotency_key
    digest = request_hash(cmd) if key is not None else None
    fresh_after = idempotency.fresh_after(now, idempotency_ttl)
    try:
        network, token = resolve_pair(registry, cmd.network, cmd.token, owner.test_mode)
        product = (
            chargeable_product(conn, owner, cmd.product_id, network.name, token.symbol)
            if cmd.product_id is not None
            else None
        )
        currency = payment_currency(cmd, product)
        market = quote(rates, token.symbol, currency, owner.test_mode)
    except DomainError:
        # a request the key was already used for is answered as it was, whatever holds now
        if key is not None and (earlier := _earlier(conn, owner, key, digest, fresh_after)) is not None:
            return earlier
        raise
    hint = index_hint(conn.engine, owner, network.key_chain)
    found = ReadForCreate._make(
        WALLET_AND_KEY(
            conn,
            {
                "merchant_id": owner.merchant_id,
                "mode": owner.mode,
                "chain": network.key_chain,
                "test_mode": owner.test_mode,
                "key": key,
                "fresh_after": fresh_after,
                "default_key": TEST_XPUBS[network.key_chain] if owner.test_mode else None,
                "expected_key": hint.key,
                "sequence": hint.sequence,
            },
        )[0]
    )
    if found.request_hash is not None:
        if found.payment_id is None:  # the key made a refund (POST /payments/:id/refunds)
            raise IdempotencyConflict(idempotency.USED_FOR_A_REFUND)
        return _replay(conn, found.request_hash, found.payment_id, digest)
    pricing = price(cmd, product, token, market, currency, found.rate_spread_pct or Decimal(0))
    payment_id = uuid.uuid4()
    receiving = receiving_address(
        conn,
        owner,
        network,
        (found.xpub, found.settlement_address),
        payment_id,
        hint=hint,
        index=found.derivation_index,
        allow_test_keys=allow_test_keys,
    )
    short_id = new_short_id()
    payment = PaymentRow(
        id=payment_id,
        merchant_id=owner.merchant_id,
        short_id=short_id,
        status=PaymentStatus.PENDING,
        amount=pricing.amount,
        token=token.symbol,
        network=network.name,
        decimals=token.decimals,
        address=receiving.address,
        crypto_amount_units=pricing.units,
        amount_received_units=0,
        exchange_rate=pricing.rate,
        confirmations=0,
        required_confirmations=network.required_confirmations,
        transaction_hash=None,
        checkout_url=urls.checkout_url(checkout_base, short_id),
        customer_email=cmd.customer_email,
        customer_name=cmd.customer_name,
        redirect_url=cmd.redirect_url,
        cancel_url=cmd.cancel_url,
        product_id=product.id if product else None,
        metadata_=cmd.metadata or {},
        test_mode=owner.test_mode,
        expires_at=now + timedelta(minutes=owner.lifetime_minutes),
        created_at=now,
        updated_at=now,
        completed_at=None,
        settlement_address=receiving.settlement_address,
        sweep_tx_hash=None,
        swept_at=None,
        wrong_network=[],
        currency=currency,
        rate_source=market.source + (f"; spread {pricing.spread_pct}%" if pricing.spread_pct else ""),
        rate_locked_until=terms.lock_until(now, owner.lifetime_minutes, found.rate_lock_minutes),
        arrival_exchange_rate=None,
    )
    event = payment_event(payment, EventType.PAYMENT_CREATED, now, [])
    written = INSERT_PAYMENT(
        conn,
        {
            **payment._asdict(),
            "metadata": json.dumps(payment.metadata_),
            "status": str(payment.status),
            "derivation_index": receiving.derivation_index,
            "deposit_salt": receiving.deposit_salt,
            "rate_spread_pct": pricing.spread_pct,
            "key": key,
            "request_hash": digest,
            "fresh_after": fresh_after,
            "event_id": event.id,
            "event_type": str(event.event),
            "payload": json.dumps(event.body()),
        },
    )
    if not written:  # a concurrent request with the same key came first
        earlier = _earlier(conn, owner, key, digest, fresh_after) if key is not None else None
        if earlier is None:
            raise idempotency.in_flight()
        return earlier
    # the payment object the event carries is the answer (without the event's payment_id)
    return Created({k: v for k, v in event.data.items() if k != "payment_id"}, False)


def _earlier(conn: Connection, owner: Owner, key: str, digest: str | None, fresh_after: datetime) -> Created | None:
    """The answer to a request whose key an unexpired earlier request holds; None if none does."""
    row = conn.exec_driver_sql(
        EARLIER_REQUEST,
        {"merchant_id": owner.merchant_id, "test_mode": owner.test_mode, "key": key, "fresh_after": fresh_after},
    ).first()
    if row is None or row.payment_id is None:
        return None
    return _replay(conn, row.request_hash, row.payment_id, digest)


def _replay(conn: Connection, earlier_hash: str, payment_id: uuid.UUID, digest: str | None) -> Created:
    idempotency.same_request(earlier_hash, digest)
    with Session(bind=conn) as session:
        payment = session.get(Payment, payment_id)
        return Created(payment_object(payment), True)  # its transfers and refunds read from the session
