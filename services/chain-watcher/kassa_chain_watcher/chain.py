"""What the scanner needs from a chain, and the values it passes around."""

from __future__ import annotations

from collections.abc import Collection, Container
from dataclasses import dataclass, field
from typing import Any, Protocol


class ChainMoved(Exception):
    """The chain changed while we read it (a reorg between two calls): read again."""


@dataclass(frozen=True)
class Found:
    """A transfer to a watched address. ``index``: log index (ERC-20), -1 (native EVM), vout (Bitcoin).

    ``position``: its place inside its transaction where that differs from ``index`` (an
    ERC-20 log's rank among the transaction's transfer logs to ``to``), which stays the
    same when a reorg moves the transaction to another block.

    ``sender``: who sent it where the chain says (an ERC-20 log's ``from``, a native
    transaction's ``from``), None elsewhere; not part of what the transfer is (comparisons
    and the quorum's cross-check ignore it: blocks stored before it was read have none).
    """

    tx_hash: str
    index: int
    token: str
    to: str
    amount_units: int
    position: int | None = None
    sender: str | None = field(default=None, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        """Where the node lists it: its transaction and index (Bitcoin's mempool memory)."""
        return (self.tx_hash, self.index)

    @property
    def identity(self) -> tuple[str, str, int]:
        """What it is, wherever a reorg puts it: its transaction, recipient and place there.
        One transaction may pay several addresses (a batch payout: native internal calls
        to each rank -2, -3, … per address), so the recipient is part of it."""
        return (self.tx_hash, self.to, self.place)

    @property
    def place(self) -> int:
        return self.index if self.position is None else self.position

    def to_json(self) -> dict[str, Any]:
        d = {"tx": self.tx_hash, "i": self.index, "token": self.token, "to": self.to, "units": str(self.amount_units)}
        if self.position is not None:
            d["p"] = self.position
        if self.sender is not None:
            d["from"] = self.sender
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Found:
        return cls(d["tx"], int(d["i"]), d["token"], d["to"], int(d["units"]), d.get("p"), d.get("from"))


@dataclass
class Block:
    number: int
    hash: str
    parent_hash: str
    transfers: list[Found] = field(default_factory=list)


class Chain(Protocol):
    def tip(self) -> int:
        """Height of the best block."""

    def blocks(self, start: int, end: int, watched: Container[str]) -> list[Block]:
        """Blocks ``start..end`` (inclusive), linked by parent hash, with their transfers to
        ``watched`` (normalised addresses). Raises ChainMoved if the range changed mid-read
        or does not exist (any more)."""

    def hashes(self, numbers: list[int]) -> dict[int, str]:
        """Hash of the best chain's block at each height (heights above the tip are left out)."""

    def mempool(self, watched: Container[str]) -> list[Found]:
        """Unconfirmed transfers to ``watched`` (chains without a visible mempool: [])."""

    def history(self, start: int, end: int, addresses: Collection[str], native: Collection[str] = ()) -> list[Block]:
        """The blocks of ``start..end`` holding transfers to ``addresses`` (newly watched ones),
        with those transfers only; ``parent_hash`` may be empty. ``native``: the watched
        addresses of open native-coin payments (EVM: their balances are followed too)."""

    def close(self) -> None: ...
