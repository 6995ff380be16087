"""Bus contracts: every message Kassa sends over RabbitMQ.

One typed message per routing key, each with ``to_message`` (what a producer publishes
or writes to the outbox) and ``from_message`` (what a consumer accepts):

==========================  ======================  ======================================
routing key                 message                 producers → consumers
==========================  ======================  ======================================
``chain.transfer.seen``     ``TransferReport``      chain-watcher, test mode → settler
``chain.transfer.confirmed``
``chain.transfer.orphaned``
``chain.transfer.reorged``
``payment.<event>``         ``EventEnvelope``       the payment package (outbox) → webhook-sender
``refund.<event>``          ``EventEnvelope``       the refund package (outbox) → webhook-sender
``payment.created``         ``AddressFeed``         (the same event) → chain-watcher's watchlist
``chain.watermark``         ``ChainWatermark``      chain-watcher → settler (``payments.watermark``)
==========================  ======================  ======================================

The statuses the database stores are in ``kassa_common.statuses``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from kassa_common.messaging.publisher import Message
from kassa_common.statuses import TransferStatus


class EventType(StrEnum):
    """Webhook event types; an event's routing key is its type."""

    PAYMENT_CREATED = "payment.created"
    PAYMENT_DETECTED = "payment.detected"
    PAYMENT_PARTIALLY_PAID = "payment.partially_paid"
    PAYMENT_COMPLETED = "payment.completed"
    PAYMENT_EXPIRED = "payment.expired"
    PAYMENT_CANCELED = "payment.canceled"
    PAYMENT_LATE_PAYMENT = "payment.late_payment"
    # a supported token reached the payment's address on another EVM network (recorded on the
    # payment's ``wrong_network``, not counted, recoverable), once per confirmed transfer
    PAYMENT_WRONG_NETWORK = "payment.wrong_network"
    PAYMENT_SWEPT = "payment.swept"  # a forwarder deposit's funds reached the settlement address
    # a confirmed transfer of the payment was lost in a reorg deeper than the confirmations
    PAYMENT_REORGED = "payment.reorged"
    # refunds (DESIGN §8): ``data`` is the refund object, with ``refund_id`` and ``payment_id``
    REFUND_CREATED = "refund.created"
    REFUND_CLAIMED = "refund.claimed"  # the customer gave an address: the merchant pays it
    REFUND_COMPLETED = "refund.completed"  # its payout confirmed on chain
    REFUND_CANCELED = "refund.canceled"
    REFUND_EXPIRED = "refund.expired"  # unclaimed after REFUND_CLAIM_DAYS
    REFUND_REORGED = "refund.reorged"  # its payout left the chain: awaiting payment again
    WEBHOOK_TEST = "webhook.test"  # sent on demand to one endpoint, never subscribed to


PAYMENT_EVENTS: tuple[EventType, ...] = tuple(e for e in EventType if e.startswith("payment."))
REFUND_EVENTS: tuple[EventType, ...] = tuple(e for e in EventType if e.startswith("refund."))
# what a webhook endpoint may subscribe to (its ``events``; all of them by default)
WEBHOOK_EVENTS: tuple[EventType, ...] = PAYMENT_EVENTS + REFUND_EVENTS


class RoutingKey(StrEnum):
    TRANSFER_SEEN = "chain.transfer.seen"
    TRANSFER_CONFIRMED = "chain.transfer.confirmed"
    TRANSFER_ORPHANED = "chain.transfer.orphaned"
    TRANSFER_REORGED = "chain.transfer.reorged"
    # test mode's simulated transfers: the same reports, in a queue of their own
    TEST_TRANSFER_CONFIRMED = "test.transfer.confirmed"
    # a watcher's progress, applied by the settler once every report before it was (expiry)
    CHAIN_WATERMARK = "chain.watermark"
    # binding patterns of the consuming queues (bus.topology)
    ALL_TRANSFERS = "chain.transfer.*"
    ALL_TEST_TRANSFERS = "test.transfer.*"
    ALL_PAYMENT_EVENTS = "payment.*"
    ALL_REFUND_EVENTS = "refund.*"


_TRANSFER_KEYS = {
    TransferStatus.SEEN: RoutingKey.TRANSFER_SEEN,
    TransferStatus.CONFIRMED: RoutingKey.TRANSFER_CONFIRMED,
    TransferStatus.ORPHANED: RoutingKey.TRANSFER_ORPHANED,
    TransferStatus.REORGED: RoutingKey.TRANSFER_REORGED,
}
_SIMULATED_KEYS = {TransferStatus.CONFIRMED: RoutingKey.TEST_TRANSFER_CONFIRMED}
_TRANSFER_STATUSES = {key: status for keys in (_TRANSFER_KEYS, _SIMULATED_KEYS) for status, key in keys.items()}


@dataclass(frozen=True)
class TransferReport:
    """A transfer to a payment's address as a chain watcher (or test mode) saw it.

    ``log_index`` is the ERC-20 log index, -1 for a native EVM transfer, the vout for
    Bitcoin. ``position`` is the transfer's place inside its transaction, which a reorg
    moving the transaction to another block cannot change (for an ERC-20 log, its rank
    among the transaction's transfer logs to the same address); it defaults to
    ``log_index`` (a vout, -1 and test mode's 0 are places already; a native coin's internal
    credits rank -2, -3, … per recipient in their transaction). The transfer is (network,
    tx_hash, position, to), and so is the message id: one transaction paying several
    payments (a batch payout) is as many transfers and messages. Amounts are exact integers in the token's base units
    (a string on the wire). ``simulated``: test mode's, routed apart from the chain's.
    ``sender``: who sent it, where the watcher knows (an ERC-20 log's ``from``, a native
    transaction's ``from``; None on Bitcoin and in older messages): a refund's payout records it.
    """

    status: TransferStatus
    network: str
    tx_hash: str
    log_index: int
    token: str
    to: str
    amount_units: int
    block_number: int | None = None
    block_hash: str | None = None
    confirmations: int = 0
    position: int | None = None
    simulated: bool = False
    sender: str | None = None

    @property
    def place(self) -> int:
        return self.log_index if self.position is None else self.position

    @property
    def routing_key(self) -> RoutingKey:
        return (_SIMULATED_KEYS if self.simulated else _TRANSFER_KEYS)[self.status]

    def default_id(self) -> str:
        """The watcher's message id: the same report is the same message, however often sent."""
        raw = (
            f"{self.network}:{self.tx_hash}:{self.log_index}:{self.to.lower()}:{self.place}:{self.block_hash}:"
            f"{self.status.lower()}:{self.confirmations}"
        )
        return "cw_" + hashlib.sha256(raw.encode()).hexdigest()[:40]

    def body(self) -> dict[str, Any]:
        body = {
            "network": self.network,
            "tx_hash": self.tx_hash,
            "log_index": self.log_index,
            "token": self.token,
            "to": self.to,
            "amount_units": str(self.amount_units),
            "block_number": self.block_number,
            "block_hash": self.block_hash,
            "confirmations": self.confirmations,
        }
        if self.position is not None:
            body["position"] = self.position
        if self.sender is not None:
            body["sender"] = self.sender
        return body

    def to_message(self, message_id: str | None = None) -> Message:
        return Message(message_id or self.default_id(), self.routing_key, self.body())

    @classmethod
    def from_message(cls, routing_key: str, body: Mapping[str, Any]) -> TransferReport:
        """Raises KeyError, ValueError or TypeError for anything that is not a transfer report."""
        key = RoutingKey(routing_key)
        return cls(
            status=_TRANSFER_STATUSES[key],
            simulated=key in _SIMULATED_KEYS.values(),
            network=str(body["network"]).upper(),
            tx_hash=str(body["tx_hash"]),
            log_index=int(body["log_index"]),
            token=str(body["token"]).upper(),
            to=str(body["to"]),
            amount_units=int(body["amount_units"]),
            block_number=body.get("block_number"),
            block_hash=body.get("block_hash"),
            confirmations=int(body.get("confirmations") or 0),
            position=int(body["position"]) if body.get("position") is not None else None,
            sender=str(body["sender"]) if body.get("sender") is not None else None,
        )


@dataclass(frozen=True)
class ChainWatermark:
    """A chain watcher's progress on ``network``: every report it published is recorded in
    ``chain_reports`` up to ``through``, and (``scanned_at``) it had read the chain's tip at
    that time with every block up to it reported (None: a claim about the ledger only; the
    watcher sends none while catching up). The settler applies it only once all those reports
    are applied (``payments.watermark``)."""

    ROUTING_KEY = RoutingKey.CHAIN_WATERMARK

    network: str
    through: int
    scanned_at: datetime | None = None

    def to_message(self) -> Message:
        at = self.scanned_at.isoformat() if self.scanned_at else None
        raw = f"{self.network}:{self.through}:{at}"
        return Message(
            "wm_" + hashlib.sha256(raw.encode()).hexdigest()[:40],
            self.ROUTING_KEY,
            {"network": self.network, "through": self.through, "scanned_at": at},
        )

    @classmethod
    def from_message(cls, routing_key: str, body: Mapping[str, Any]) -> ChainWatermark:
        """Raises KeyError, ValueError or TypeError for anything that is not a watermark."""
        if routing_key != cls.ROUTING_KEY:
            raise ValueError(f"not a {cls.ROUTING_KEY} message")
        at = body.get("scanned_at")
        scanned_at = datetime.fromisoformat(at) if at else None
        if scanned_at is not None and scanned_at.tzinfo is None:
            raise ValueError("scanned_at has no time zone")
        return cls(str(body["network"]).upper(), int(body["through"]), scanned_at)


@dataclass(frozen=True)
class EventEnvelope:
    """An event of a payment or a refund (or a webhook test) as merchants receive it: the
    envelope (``id``, ``event``: its type and routing key, ``timestamp``, ``test_mode``)
    around ``data``, the payment's or the refund's object. The webhook sender delivers it
    and emails from it; the chain watcher reads ``payment.created`` as an ``AddressFeed``."""

    id: str
    event: EventType
    timestamp: str
    test_mode: bool
    data: dict[str, Any]

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "event": self.event,
            "timestamp": self.timestamp,
            "test_mode": self.test_mode,
            "data": self.data,
        }

    def to_message(self) -> Message:
        return Message(self.id, self.event, self.body())

    @classmethod
    def from_message(cls, routing_key: str, body: Mapping[str, Any]) -> EventEnvelope:
        return cls(
            id=str(body["id"]),
            event=EventType(routing_key),
            timestamp=str(body["timestamp"]),
            test_mode=bool(body["test_mode"]),
            data=dict(body["data"]),
        )


@dataclass(frozen=True)
class AddressFeed:
    """What the chain watcher takes from ``payment.created``: a new address to watch."""

    ROUTING_KEY = EventType.PAYMENT_CREATED

    network: str
    address: str
    test_mode: bool
    token: str = ""

    @classmethod
    def from_message(cls, routing_key: str, body: Mapping[str, Any]) -> AddressFeed:
        event = EventEnvelope.from_message(routing_key, body)
        if event.event != cls.ROUTING_KEY:
            raise ValueError(f"not a {cls.ROUTING_KEY} event")
        address = event.data.get("address")
        if not address:
            raise ValueError("the payment has no address")
        return cls(
            str(event.data.get("network", "")).upper(),
            str(address),
            bool(event.data.get("test_mode", event.test_mode)),
            str(event.data.get("token", "")).upper(),
        )
