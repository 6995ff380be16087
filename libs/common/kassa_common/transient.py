"""Telling an outage from a bad message, and waiting one out.

DESIGN §1: while PostgreSQL, RabbitMQ or an RPC node is unreachable, a worker stops taking
work and waits, backing off up to ~30 s, instead of spending a message's attempts; only a
message that fails on its own goes to the dead-letter queue. ``is_transient`` says whether
an exception looks like infrastructure (a lost or refused connection, a timeout); callers
confirm it with a probe (can the database be reached right now?), so an error that keeps
coming back with the infrastructure up still counts against the message. ``Backoff``
gives the waits: exponential, capped, with full jitter so a fleet of workers does not
come back in lockstep.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import sqlalchemy.exc as sa_exc

CAP_SECONDS = 30.0

# Names of exception classes from libraries this module need not import (requests, web3's
# transport, pika): connection-level failures, not answers.
_TRANSIENT_NAMES = {
    "ConnectionError",
    "ConnectTimeout",
    "ReadTimeout",
    "Timeout",  # requests
    "AMQPConnectionError",
    "ConnectionClosed",
    "StreamLostError",
    "ConnectionWrongStateError",
    "ChannelWrongStateError",
    "ConnectionClosedByBroker",  # pika
}


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a connection-level failure or a timeout."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _transient(current):
            return True
        current = current.__cause__ or current.__context__
    return False


def _transient(exc: BaseException) -> bool:
    if isinstance(
        exc, (sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError, sa_exc.DisconnectionError)
    ):
        return True
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    return type(exc).__name__ in _TRANSIENT_NAMES


@dataclass
class Backoff:
    """Waits of ``initial`` · 2ⁿ, capped at ``cap``, each drawn uniformly from its upper half
    (some jitter, never a near-zero wait). ``reset()`` after a success."""

    initial: float = 0.5
    cap: float = CAP_SECONDS
    _n: int = field(default=0, repr=False)

    def next(self) -> float:
        ceiling = min(self.cap, self.initial * (2**self._n))
        self._n = min(self._n + 1, 32)
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        self._n = 0
