"""The watcher's durable state per network: the cursor and the recently scanned blocks.

Blocks are written before anything derived from them is published, and the cursor's
``confirmed_through`` only moves after the confirmed reports were published, so a
watcher killed at any moment resumes without a gap and re-publishes at most messages
that the settler recognises by id. Every block above ``confirmed_through`` stays stored
(however many a catch-up reads at once): only blocks both confirmed-reported and older
than the ``keep`` blocks kept for reorg tracking are pruned.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.db import unit_of_work
from kassa_common.models import ChainBlock, ChainCursor, ChainMempoolTransfer, ChainReport, Payment, Refund
from kassa_common.statuses import RefundStatus
from kassa_common.timefmt import utcnow
from kassa_chain_watcher.chain import Block, Found
from kassa_chain_watcher.mempool import Pending, Sighting

# One statement whatever the batch's size (compiled once, the ids as one array).
RECORD_REPORTS = sa.text("""
    WITH written AS (
        INSERT INTO chain_reports (network, message_id)
        SELECT :network, unnest(CAST(:ids AS text[]))
        ON CONFLICT (message_id) DO NOTHING
        RETURNING seq
    )
    SELECT max(seq) FROM written
""")


@dataclass
class State:
    head: int | None = None  # last scanned height (None: never scanned)
    confirmed_through: int = -1
    blocks: dict[int, Block] = field(default_factory=dict)  # recent blocks by height
    scanned_at: datetime | None = None  # when the tip last was read with everything below it reported

    @property
    def head_hash(self) -> str | None:
        block = self.blocks.get(self.head) if self.head is not None else None
        return block.hash if block else None

    def prune_line(self, keep: int) -> int:
        """Blocks at or below this height may go: reported confirmed, and out of the reorg window."""
        return min(self.head - keep, self.confirmed_through) if self.head is not None else -1

    def prune(self, keep: int) -> None:
        line = self.prune_line(keep)
        for n in [n for n in self.blocks if n <= line]:
            del self.blocks[n]


class Store:
    def __init__(self, sessions: sessionmaker[Session], network: str, keep: int) -> None:
        self.sessions, self.network, self.keep = sessions, network, keep

    def load(self) -> State:
        with self.sessions() as s:
            cursor = s.get(ChainCursor, self.network)
            rows = s.scalars(sa.select(ChainBlock).where(ChainBlock.network == self.network)).all()
        if cursor is None:
            return State()
        blocks = {
            r.number: Block(r.number, r.hash, r.parent_hash, [Found.from_json(t) for t in r.transfers]) for r in rows
        }
        return State(cursor.block_number, cursor.confirmed_through, blocks, cursor.scanned_at)

    def created_blocks(self, addresses: Collection[str]) -> dict[str, int | None]:
        """Where this network's watcher stood when each address's payment was created: the
        payment's ``created_block`` on its own network, its ``watch_points`` entry for this one
        on another (an EVM address watched for funds sent on the wrong network). Another
        network's height means nothing here; None: no watcher of this network ran then. A
        claimed refund's address: the height when it was claimed (``Refund.claim_block``)."""
        here = sa.case(
            (Payment.network == self.network, Payment.created_block),
            else_=Payment.watch_points[self.network].as_integer(),
        )
        wanted = [a.lower() for a in addresses]
        with self.sessions() as s:
            rows = s.execute(
                sa.select(sa.func.lower(Payment.address), here).where(sa.func.lower(Payment.address).in_(wanted))
            ).all()
            # A claimed refund's payout counts only in a block after ``claim_block``.
            refunds = s.execute(
                sa.select(sa.func.lower(Refund.address), Refund.claim_block).where(
                    Refund.network == self.network,
                    Refund.status == RefundStatus.AWAITING_PAYMENT,
                    Refund.test_mode.is_(False),  # no chain transfer pays a test refund
                    sa.func.lower(Refund.address).in_(wanted),
                )
            ).all()
        out: dict[str, int | None] = dict(rows)
        for address, block in refunds:
            known = out.get(address)
            out[address] = block if known is None or (block is not None and block < known) else known
        return out

    def recent_addresses(self, networks: Collection[str], slack: timedelta) -> list[str]:
        """Addresses of live payments created since ``slack`` before this network's cursor
        last moved: the watcher that wrote it may have read blocks without them (an address
        reaches a watcher by the bus or the next reload, and it may have died before), so a
        watcher starting here backfills them instead of taking the stored blocks as complete."""
        with self.sessions() as s:
            last = s.scalar(sa.select(ChainCursor.updated_at).where(ChainCursor.network == self.network))
            if last is None:
                return []
            payments = s.scalars(
                sa.select(Payment.address).where(
                    Payment.network.in_(list(networks)),
                    Payment.test_mode.is_(False),
                    Payment.created_at >= last - slack,
                )
            )
            refunds = s.scalars(
                sa.select(Refund.address).where(
                    Refund.network == self.network,
                    Refund.status == RefundStatus.AWAITING_PAYMENT,
                    Refund.test_mode.is_(False),
                    Refund.claimed_at >= last - slack,
                )
            )
            return [*payments, *(a for a in refunds if a)]

    def append(self, state: State, new: list[Block], *, confirmed_through: int | None = None) -> None:
        """Record newly scanned blocks (and optionally a new confirmed line), prune old ones."""
        head = new[-1].number if new else state.head
        assert head is not None  # blocks follow a first scan
        with unit_of_work(self.sessions) as s:
            if new:
                s.execute(
                    pg_insert(ChainBlock)
                    .values(
                        [
                            {
                                "network": self.network,
                                "number": b.number,
                                "hash": b.hash,
                                "parent_hash": b.parent_hash,
                                "transfers": [f.to_json() for f in b.transfers],
                            }
                            for b in new
                        ]
                    )
                    .on_conflict_do_update(
                        index_elements=["network", "number"],
                        set_={
                            "hash": sa.text("excluded.hash"),
                            "parent_hash": sa.text("excluded.parent_hash"),
                            "transfers": sa.text("excluded.transfers"),
                        },
                    )
                )
            confirmed = state.confirmed_through if confirmed_through is None else confirmed_through
            self._cursor(s, head, new[-1].hash if new else state.head_hash, confirmed, state.scanned_at)
            s.execute(
                sa.delete(ChainBlock).where(
                    ChainBlock.network == self.network, ChainBlock.number <= min(head - self.keep, confirmed)
                )
            )
        for b in new:
            state.blocks[b.number] = b
        state.head, state.confirmed_through = head, confirmed
        state.prune(self.keep)

    def confirm_through(self, state: State, height: int, *, scanned_at: datetime | None = None) -> None:
        """Move the confirmed line (its reports are published); ``scanned_at``: caught up as of then."""
        scanned_at = scanned_at or state.scanned_at
        with unit_of_work(self.sessions) as s:
            self._cursor(s, state.head, state.head_hash, height, scanned_at)
        state.confirmed_through, state.scanned_at = height, scanned_at

    def set_transfers(self, state: State, block: Block) -> None:
        with unit_of_work(self.sessions) as s:
            s.execute(
                sa.update(ChainBlock)
                .where(
                    ChainBlock.network == self.network, ChainBlock.number == block.number, ChainBlock.hash == block.hash
                )
                .values(transfers=[f.to_json() for f in block.transfers])
            )
        state.blocks[block.number] = block

    def rewind(self, state: State, fork: int) -> None:
        """Forget every block above ``fork`` (they left the best chain)."""
        confirmed = min(state.confirmed_through, fork)
        with unit_of_work(self.sessions) as s:
            s.execute(sa.delete(ChainBlock).where(ChainBlock.network == self.network, ChainBlock.number > fork))
            fork_block = state.blocks.get(fork)
            self._cursor(s, fork, fork_block.hash if fork_block else None, confirmed, state.scanned_at)
        for n in [n for n in state.blocks if n > fork]:
            del state.blocks[n]
        state.head, state.confirmed_through = fork, confirmed

    # -- the reports ledger (kassa_common.payments.watermark) ---------------------------
    def record_reports(self, message_ids: list[str]) -> int | None:
        """Record reports the broker confirmed; the ledger's highest number for the network
        among those just written (None: all were there already)."""
        if not message_ids:
            return None
        with unit_of_work(self.sessions) as s:
            return s.scalar(RECORD_REPORTS, {"network": self.network, "ids": message_ids})

    def reports_through(self) -> int:
        """The ledger's highest number for the network (0: none)."""
        with self.sessions() as s:
            return (
                s.scalar(
                    sa.select(sa.func.coalesce(sa.func.max(ChainReport.seq), 0)).where(
                        ChainReport.network == self.network
                    )
                )
                or 0
            )

    # -- unconfirmed transfers reported seen (mempool.py) ---------------------------------
    def load_mempool(self) -> Pending:
        with self.sessions() as s:
            rows = s.scalars(sa.select(ChainMempoolTransfer).where(ChainMempoolTransfer.network == self.network)).all()
        return {(r.tx_hash, r.log_index): Sighting(Found.from_json(r.transfer), r.misses, r.sighting) for r in rows}

    def save_mempool(self, before: Pending, after: Pending) -> None:
        """Write the difference between two mempool memories (one transaction)."""
        gone = [k for k in before if k not in after]
        changed = [
            {
                "network": self.network,
                "tx_hash": k[0],
                "log_index": k[1],
                "transfer": s.found.to_json(),
                "misses": s.misses,
                "sighting": s.token,
            }
            for k, s in after.items()
            if before.get(k) != s
        ]
        if not gone and not changed:
            return
        with unit_of_work(self.sessions) as s:
            if gone:
                s.execute(
                    sa.delete(ChainMempoolTransfer).where(
                        ChainMempoolTransfer.network == self.network,
                        sa.tuple_(ChainMempoolTransfer.tx_hash, ChainMempoolTransfer.log_index).in_(gone),
                    )
                )
            if changed:
                s.execute(
                    pg_insert(ChainMempoolTransfer)
                    .values(changed)
                    .on_conflict_do_update(
                        index_elements=["network", "tx_hash", "log_index"],
                        set_={
                            "transfer": sa.text("excluded.transfer"),
                            "misses": sa.text("excluded.misses"),
                            "sighting": sa.text("excluded.sighting"),
                        },
                    )
                )

    def _cursor(
        self, s: Session, head: int | None, head_hash: str | None, confirmed: int, scanned_at: datetime | None
    ) -> None:
        values = {
            "block_number": head if head is not None else -1,
            "block_hash": head_hash,
            "confirmed_through": confirmed,
            "scanned_at": scanned_at,
            "updated_at": utcnow(),
        }
        s.execute(
            pg_insert(ChainCursor)
            .values(network=self.network, **values)
            .on_conflict_do_update(index_elements=["network"], set_=values)
        )
