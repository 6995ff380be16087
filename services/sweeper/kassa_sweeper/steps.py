"""What one sweeper step returns, and the shapes a sweep records (its plan, its attempts)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from kassa_common.models import Sweep
from kassa_common.sweeps import Deposit
from kassa_sweeper.txs import Fees


class Outcome(StrEnum):
    BUSY = "busy"  # another sweeper holds the network
    IDLE = "idle"  # nothing in flight, nothing due
    WAITING = "waiting"  # a sweep is in flight: not mined or not confirmed yet
    SENT = "sent"
    REPLACED = "replaced"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    HELD = "held"  # deposits taken out of the batch (their estimation failed); the rest go next
    CAPPED = "capped"  # due deposits, but the key's spending cap for the hour is reached
    SKIPPED = "skipped"  # due deposits, but nothing could be sent (see the log)


@dataclass(frozen=True)
class Step:
    outcome: Outcome
    sweep: Sweep | None = None
    broadcast: str | None = None  # raw bytes to send once the step has committed
    note: str | None = None  # why nothing was sent (CAPPED, SKIPPED)

    @property
    def progressed(self) -> bool:
        return self.outcome in (Outcome.SENT, Outcome.REPLACED, Outcome.CONFIRMED, Outcome.FAILED, Outcome.HELD)


@dataclass(frozen=True)
class Plan:
    deposits: list[Deposit]
    held: dict[str, dict[str, int]]  # deposit address (lower) -> symbol -> units, on chain now

    def empty(self) -> list[Deposit]:
        return [d for d in self.deposits if not any(self.held[d.address.lower()].values())]

    def full(self) -> list[Deposit]:
        return [d for d in self.deposits if any(self.held[d.address.lower()].values())]


def planned(d: Deposit, plan: Plan, factory: str | None = None) -> dict[str, Any]:
    """A deposit as a sweep records it: whose, where, through which factory (None: the
    network's), and what it held when planned."""
    return {
        "payment_id": str(d.payment_id),
        "short_id": d.short_id,
        "address": d.address,
        "settlement": d.settlement,
        "salt": d.salt,
        "solo": d.solo,
        "factory": factory,
        "held": {s: str(u) for s, u in plan.held[d.address.lower()].items() if u},
    }


def attempt(tx_hash: str, raw: str, fees: Fees, when: datetime) -> dict:
    return {
        "tx_hash": tx_hash,
        "raw": raw,
        "max_fee_per_gas": fees.max_fee_per_gas,
        "max_priority_fee_per_gas": fees.max_priority_fee_per_gas,
        "sent_at": when.isoformat(),
    }
