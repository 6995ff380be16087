"""The watcher's durable state per network: the cursor and the recently scanned blocks.

Blocks are written before anything derived from them is published, and the cursor's
``confirmed_through`` only moves after the confirmed reports were published, so a
watcher killed at any moment resumes without a gap and re-publishes at most messages
that the settler recognises by id.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session, sessionmaker

from kassa_common.db import unit_of_work
from kassa_common.models import ChainBlock, ChainCursor
from kassa_common.timefmt import utcnow

from kassa_chain_watcher.chain import Block, Found


@dataclass
class State:
    head: int | None = None  # last scanned height (None: never scanned)
    confirmed_through: int = -1
    blocks: dict[int, Block] = field(default_factory=dict)  # recent blocks by height

    @property
    def head_hash(self) -> str | None:
        block = self.blocks.get(self.head) if self.head is not None else None
        return block.hash if block else None


class Store:
    def __init__(self, sessions: sessionmaker[Session], network: str, keep: int) -> None:
        self.sessions, self.network, self.keep = sessions, network, keep

    def load(self) -> State:
        with self.sessions() as s:
            cursor = s.get(ChainCursor, self.network)
            rows = s.scalars(sa.select(ChainBlock).where(ChainBlock.network == self.network)).all()
        if cursor is None:
            return State()
        blocks = {r.number: Block(r.number, r.hash, r.parent_hash, [Found.from_json(t) for t in r.transfers])
                  for r in rows}
        return State(cursor.block_number, cursor.confirmed_through, blocks)

    def append(self, state: State, new: list[Block], *, confirmed_through: int | None = None) -> None:
        """Record newly scanned blocks (and optionally a new confirmed line), prune old ones."""
        head = new[-1].number if new else state.head
        with unit_of_work(self.sessions) as s:
            if new:
                s.execute(pg_insert(ChainBlock).values([
                    {"network": self.network, "number": b.number, "hash": b.hash, "parent_hash": b.parent_hash,
                     "transfers": [f.to_json() for f in b.transfers]} for b in new[-self.keep:]
                ]).on_conflict_do_update(index_elements=["network", "number"], set_={
                    "hash": sa.text("excluded.hash"), "parent_hash": sa.text("excluded.parent_hash"),
                    "transfers": sa.text("excluded.transfers")}))
            confirmed = state.confirmed_through if confirmed_through is None else confirmed_through
            self._cursor(s, head, new[-1].hash if new else state.head_hash, confirmed)
            s.execute(sa.delete(ChainBlock).where(ChainBlock.network == self.network,
                                                  ChainBlock.number <= head - self.keep))
        for b in new:
            state.blocks[b.number] = b
        state.head, state.confirmed_through = head, confirmed
        for n in [n for n in state.blocks if n <= head - self.keep]:
            del state.blocks[n]

    def confirm_through(self, state: State, height: int) -> None:
        with unit_of_work(self.sessions) as s:
            self._cursor(s, state.head, state.head_hash, height)
        state.confirmed_through = height

    def set_transfers(self, state: State, block: Block) -> None:
        with unit_of_work(self.sessions) as s:
            s.execute(sa.update(ChainBlock).where(ChainBlock.network == self.network, ChainBlock.number == block.number,
                                                  ChainBlock.hash == block.hash)
                      .values(transfers=[f.to_json() for f in block.transfers]))
        state.blocks[block.number] = block

    def rewind(self, state: State, fork: int) -> None:
        """Forget every block above ``fork`` (they left the best chain)."""
        confirmed = min(state.confirmed_through, fork)
        with unit_of_work(self.sessions) as s:
            s.execute(sa.delete(ChainBlock).where(ChainBlock.network == self.network, ChainBlock.number > fork))
            fork_block = state.blocks.get(fork)
            self._cursor(s, fork, fork_block.hash if fork_block else None, confirmed)
        for n in [n for n in state.blocks if n > fork]:
            del state.blocks[n]
        state.head, state.confirmed_through = fork, confirmed

    def _cursor(self, s: Session, head: int | None, head_hash: str | None, confirmed: int) -> None:
        values = {"block_number": head if head is not None else -1, "block_hash": head_hash,
                  "confirmed_through": confirmed, "updated_at": utcnow()}
        s.execute(pg_insert(ChainCursor).values(network=self.network, **values)
                  .on_conflict_do_update(index_elements=["network"], set_=values))
