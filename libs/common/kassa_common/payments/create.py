"""Creating a payment: pricing, the idempotency claim, the receiving address, the row and
its ``payment.created`` event, in the caller's transaction (API and product page alike)."""
from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from kassa_common.chains.networks import Network, Registry, Token
from kassa_common.chains.rates import STABLECOINS, RateProvider, RateUnavailable, crypto_amount, to_base_units
from kassa_common.errors import IdempotencyConflict, ProductUnavailable, RateNotAvailable, UnsupportedPair
from kassa_common.ids import new_short_id, parse_uuid
from kassa_common.messages import EventType, PaymentStatus
from kassa_common.models import ChainCursor, IdempotencyKey, Payment, Product
from kassa_common.owner import Owner
from kassa_common.payments.addresses import receiving_address
from kassa_common.payments.events import record_payment_event
from kassa_common.timefmt import utcnow

CENT = Decimal("0.01")


@dataclass(frozen=True)
class NewPayment:
    token: str
    network: str
    amount: Decimal | None = None
    product_id: str | None = None
    customer_email: str | None = None
    customer_name: str | None = None
    redirect_url: str | None = None
    cancel_url: str | None = None
    metadata: dict | None = None


@dataclass(frozen=True)
class Pricing:
    usd: Decimal
    units: int
    rate: Decimal


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


def usd_rate(rates: RateProvider, symbol: str, test_mode: bool) -> Decimal:
    if symbol in STABLECOINS:
        return Decimal(1)
    if not test_mode and not rates.live:
        raise RateNotAvailable(f"live {symbol} payments need a market rate and this server has fixed rates only: "
                               f"the operator sets RATES_URL (FIXED_RATES_ALLOW_LIVE=true is for development)")
    try:
        return rates.usd_rate(symbol)
    except RateUnavailable as exc:
        raise RateNotAvailable(f"no fresh {symbol}/USD rate is available right now; try again shortly") from exc


def price(cmd: NewPayment, product: Product | None, token: Token, rates: RateProvider, test_mode: bool) -> Pricing:
    rate = usd_rate(rates, token.symbol, test_mode)
    if product is not None and product.currency_type == "CRYPTO":
        units_decimal = product.price
        usd = (units_decimal * rate).quantize(CENT, ROUND_HALF_UP)
        return Pricing(max(usd, CENT), to_base_units(units_decimal, token.decimals), rate)
    usd = product.price.quantize(CENT, ROUND_HALF_UP) if product is not None else cmd.amount
    assert usd is not None
    return Pricing(usd, to_base_units(crypto_amount(usd, rate, token.decimals), token.decimals), rate)


def chargeable_product(session: Session, owner: Owner, product_id: str, network: str, token: str) -> Product:
    pid = parse_uuid(product_id)
    product = session.get(Product, pid) if pid else None
    if (
        product is None
        or product.merchant_id != owner.merchant_id
        or product.test_mode != owner.test_mode
        or product.deleted_at is not None
        or not product.active
    ):
        raise ProductUnavailable("the product does not exist or is not active",
                                 [{"field": "product_id", "message": "not available"}])
    if product.currency_type == "CRYPTO" and (product.network != network or product.token != token):
        raise UnsupportedPair(f"this product is priced in {product.token} on {product.network}; pay with that pair")
    return product


def request_hash(cmd: NewPayment) -> str:
    body = {k: (str(v) if isinstance(v, Decimal) else v) for k, v in cmd.__dict__.items() if v is not None}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def claim_idempotency_key(session: Session, owner: Owner, key: str, digest: str, ttl: timedelta) -> Payment | None:
    """Claim ``key`` for this request, or return the payment an earlier identical request made.

    The claim is a row written in the same transaction as the payment: a concurrent duplicate
    blocks on the unique key until the first commits, then sees its row. So one payment.
    """
    now = utcnow()
    claimed = session.execute(
        pg_insert(IdempotencyKey)
        .values(merchant_id=owner.merchant_id, test_mode=owner.test_mode, key=key, request_hash=digest, created_at=now)
        .on_conflict_do_nothing()
        .returning(IdempotencyKey.key)
    ).first()
    if claimed:
        return None
    row = session.get(IdempotencyKey, (owner.merchant_id, owner.test_mode, key), with_for_update=True)
    if row.created_at < now - ttl:  # an expired key starts afresh
        row.request_hash, row.created_at, row.payment_id = digest, now, None
        return None
    if row.request_hash != digest:
        raise IdempotencyConflict("this Idempotency-Key was already used with a different request body")
    return session.get(Payment, row.payment_id)


def _watched_height(network: str) -> sa.ScalarSelect:
    """Where the network's watcher stands (NULL before it first ran), read inside the INSERT.

    No transfer to a new address can be in a block the watcher had already scanned, so a
    late address is backfilled from here (``kassa_chain_watcher.scanner``).
    """
    return sa.select(ChainCursor.block_number).where(ChainCursor.network == network).scalar_subquery()


def create_payment(
    session: Session,
    owner: Owner,
    cmd: NewPayment,
    *,
    registry: Registry,
    rates: RateProvider,
    checkout_base: str,
    idempotency_key: str | None = None,
    idempotency_ttl: timedelta = timedelta(hours=24),
    allow_test_keys: bool = False,
) -> tuple[Payment, bool]:
    """Create a PENDING payment (and its payment.created event). Returns (payment, replayed).

    ``allow_test_keys``: a live payment may derive from a published test key (development).
    """
    if idempotency_key is not None:
        earlier = claim_idempotency_key(session, owner, idempotency_key, request_hash(cmd), idempotency_ttl)
        if earlier is not None:
            return earlier, True
    network, token = resolve_pair(registry, cmd.network, cmd.token, owner.test_mode)
    product = (chargeable_product(session, owner, cmd.product_id, network.name, token.symbol)
               if cmd.product_id is not None else None)
    pricing = price(cmd, product, token, rates, owner.test_mode)
    payment_id = uuid.uuid4()
    receiving = receiving_address(session, owner.merchant_id, owner.test_mode, network, payment_id,
                                  allow_test_keys=allow_test_keys)
    now = utcnow()
    short_id = new_short_id()
    payment = Payment(
        id=payment_id, short_id=short_id, merchant_id=owner.merchant_id, test_mode=owner.test_mode,
        status=PaymentStatus.PENDING, amount=pricing.usd, token=token.symbol, network=network.name,
        decimals=token.decimals, address=receiving.address, derivation_index=receiving.derivation_index,
        settlement_address=receiving.settlement_address, deposit_salt=receiving.deposit_salt,
        checkout_url=f"{checkout_base}/pay/{short_id}",
        crypto_amount_units=pricing.units, amount_received_units=0, exchange_rate=pricing.rate, confirmations=0,
        required_confirmations=network.required_confirmations, customer_email=cmd.customer_email,
        customer_name=cmd.customer_name, redirect_url=cmd.redirect_url, cancel_url=cmd.cancel_url,
        product_id=product.id if product else None, metadata_=cmd.metadata or {},
        expires_at=now + timedelta(minutes=owner.lifetime_minutes), created_at=now, updated_at=now,
        created_block=None if owner.test_mode else _watched_height(network.name),
    )
    session.add(payment)
    session.flush()
    if idempotency_key is not None:
        session.execute(
            sa.update(IdempotencyKey)
            .where(IdempotencyKey.merchant_id == owner.merchant_id, IdempotencyKey.test_mode == owner.test_mode,
                   IdempotencyKey.key == idempotency_key)
            .values(payment_id=payment.id, response_status=201)
        )
    record_payment_event(session, payment, EventType.PAYMENT_CREATED, now=now, transfers=[])
    return payment, False
