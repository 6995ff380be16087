"""Every status Kassa stores: payments, refunds, transfers, sweeps, webhook deliveries and emails.

Statuses are ``StrEnum``s whose values are exactly what the database stores and the API
shows, so they compare equal to the plain strings read back from either.
"""

from __future__ import annotations

from enum import StrEnum


class PaymentStatus(StrEnum):
    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    PARTIALLY_PAID = "PARTIALLY_PAID"
    EXPIRED = "EXPIRED"
    CANCELED = "CANCELED"


class RefundStatus(StrEnum):
    """A refund (DESIGN §8): waiting for the customer's address, then for the merchant's
    payout, paid (proven on chain); or canceled by the merchant, or expired unclaimed."""

    AWAITING_ADDRESS = "AWAITING_ADDRESS"
    AWAITING_PAYMENT = "AWAITING_PAYMENT"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    EXPIRED = "EXPIRED"


class TransferStatus(StrEnum):
    SEEN = "SEEN"
    CONFIRMED = "CONFIRMED"
    ORPHANED = "ORPHANED"  # left the chain before it was confirmed: it never counted
    REORGED = "REORGED"  # confirmed, then lost in a reorg deeper than the required confirmations


class SweepStatus(StrEnum):
    """A sweeper transaction: sent, mined (waiting for confirmations), confirmed, failed."""

    PENDING = "PENDING"
    MINED = "MINED"
    CONFIRMED = "CONFIRMED"
    FAILED = "FAILED"


class DeliveryStatus(StrEnum):
    PENDING = "PENDING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class NotificationStatus(StrEnum):
    """An email of the notifier: waiting (or between attempts), sent, given up."""

    PENDING = "PENDING"
    SENT = "SENT"
    FAILED = "FAILED"
