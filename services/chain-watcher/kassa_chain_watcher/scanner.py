"""Following one network: scan new blocks, count confirmations, follow reorgs.

One ``tick``:

1. Reorg check: the stored head's hash must still be the chain's hash at that height
   (and each new block's parent must be the stored head). If not, walk back through
   the stored recent blocks to the highest one still on the best chain (the fork
   point), report the transfers of the blocks above it as orphaned, forget them.
2. Addresses that arrived since the last tick are looked up in the stored blocks (a
   payment paid before its address reached us is still found).
3. Up to ``batch_blocks`` new blocks are read and stored with their matching transfers.
4. Every stored transfer above the confirmed line is reported: ``seen`` with its
   confirmation count while below the network's required confirmations, then
   ``confirmed`` once; the line moves up only after that was published.

Reports are ``messages.TransferReport``s; their ids are derived from (network, tx, index,
block hash, status, confirmations), so a restart or a retry re-publishes only messages the
settler already recognises.
"""
from __future__ import annotations

import logging
from typing import Callable

from kassa_common.bus.publisher import Message
from kassa_common.chains.networks import Network
from kassa_common.messages import TransferReport, TransferStatus

from kassa_chain_watcher.chain import Block, Chain, ChainMoved, Found
from kassa_chain_watcher.store import Store
from kassa_chain_watcher.watchlist import Watchlist

log = logging.getLogger("kassa.chain_watcher")
SEEN, CONFIRMED, ORPHANED = TransferStatus
MEMPOOL_MISSES = 2  # ticks a mempool tx must be gone (and not mined) before it counts as dropped


def report(network: str, status: TransferStatus, f: Found, block: Block | None, confirmations: int) -> Message:
    return TransferReport(status, network, f.tx_hash, f.index, f.token, f.to, f.amount_units,
                          block.number if block else None, block.hash if block else None, confirmations).to_message()


class Scanner:
    def __init__(self, network: Network, chain: Chain, store: Store, watchlist: Watchlist,
                 publish: Callable[[list[Message]], None], *, batch_blocks: int = 500,
                 start_back: int | None = None) -> None:
        self.network, self.chain, self.store, self.watchlist, self.publish = network, chain, store, watchlist, publish
        self.name = network.name
        self.required = network.required_confirmations
        self.batch_blocks = batch_blocks
        self.start_back = start_back if start_back is not None else self.required + 1
        self.state = store.load()
        self._published: dict[tuple[str, str, int], tuple[str, int]] = {}
        self._mempool: dict[tuple[str, int], tuple[Found, int]] = {}

    def tick(self) -> bool:
        """One step; True when there is more to do right away (catching up, chain moved)."""
        tip = self.chain.tip()
        st = self.state
        if st.head is None:  # first start on this network: begin just below the tip
            st.head = max(-1, tip - self.start_back)
            self.store.confirm_through(st, st.head)
        elif st.head > tip and st.head_hash is None:  # the chain got shorter below what we kept
            st.head = tip
            self.store.confirm_through(st, min(st.confirmed_through, tip))
        try:
            if self._head_replaced(tip):
                self._rewind_to_fork()
                return True
            self._rescan_new_addresses()
            end = min(tip, st.head + self.batch_blocks)
            if end > st.head:
                new = self.chain.blocks(st.head + 1, end, self.watchlist)
                if st.head_hash and new[0].parent_hash != st.head_hash:
                    self._rewind_to_fork()
                    return True
                self.store.append(st, new)
            self._report(tip)
        except ChainMoved as exc:
            log.info("%s: chain moved while reading (%s); reading again", self.name, exc)
            return True
        return st.head < tip

    # -- reorgs ---------------------------------------------------------------------------
    def _head_replaced(self, tip: int) -> bool:
        st = self.state
        if st.head_hash is None:
            return False
        if tip < st.head:
            return True
        return self.chain.hashes([st.head]).get(st.head) != st.head_hash

    def _rewind_to_fork(self) -> None:
        st = self.state
        heights = sorted(st.blocks, reverse=True)
        on_chain = self.chain.hashes(heights)
        fork = next((n for n in heights if on_chain.get(n) == st.blocks[n].hash), None)
        if fork is None:
            fork = min(heights) - 1
            log.error("%s: reorg deeper than the %d blocks kept; resuming from %d", self.name, len(heights), fork)
        if fork < st.confirmed_through:
            log.error("%s: reorg below the confirmed line (%d < %d): confirmed transfers stay final",
                      self.name, fork, st.confirmed_through)
        dropped = [st.blocks[n] for n in heights if n > fork]
        orphans = [report(self.name, ORPHANED, f, b, 0) for b in reversed(dropped) for f in b.transfers]
        if orphans:
            self.publish(orphans)
        log.warning("%s: reorg, %d block(s) above %d replaced, %d transfer(s) orphaned",
                    self.name, len(dropped), fork, len(orphans))
        self.store.rewind(st, fork)
        gone = {b.hash for b in dropped}
        self._published = {k: v for k, v in self._published.items() if k[0] not in gone}

    # -- late addresses -------------------------------------------------------------------
    def _rescan_new_addresses(self) -> None:
        st = self.state
        new = self.watchlist.take_new()
        if not new or not st.blocks:
            return
        try:
            fresh = self.chain.blocks(min(st.blocks), st.head, new)
        except ChainMoved:
            self.watchlist.requeue(new)
            raise
        for b in fresh:
            stored = st.blocks.get(b.number)
            if stored is None or stored.hash != b.hash or not b.transfers:
                continue
            known = {f.key for f in stored.transfers}
            added = [f for f in b.transfers if f.key not in known]
            if added:
                self.store.set_transfers(st, Block(b.number, b.hash, b.parent_hash, stored.transfers + added))

    # -- reports --------------------------------------------------------------------------
    def _report(self, tip: int) -> None:
        st = self.state
        messages: list[Message] = []
        pending: list[tuple[tuple[str, str, int], tuple[str, int]]] = []
        for n in sorted(st.blocks):
            if n <= st.confirmed_through:
                continue
            block = st.blocks[n]
            confs = tip - n + 1
            kind, confs = (CONFIRMED, self.required) if confs >= self.required else (SEEN, confs)
            for f in block.transfers:
                key = (block.hash, f.tx_hash, f.index)
                if self._published.get(key) != (kind, confs):
                    messages.append(report(self.name, kind, f, block, confs))
                    pending.append((key, (kind, confs)))
        messages += self._mempool_reports()
        if messages:
            self.publish(messages)
            self._published.update(pending)
        line = min(tip - self.required + 1, st.head)
        if line > st.confirmed_through:
            self.store.confirm_through(st, line)
            done = {st.blocks[n].hash for n in st.blocks if n <= line}
            self._published = {k: v for k, v in self._published.items() if k[0] not in done}

    def _mempool_reports(self) -> list[Message]:
        pool = {f.key: f for f in self.chain.mempool(self.watchlist)}
        if not pool and not self._mempool:
            return []
        mined = {f.key for b in self.state.blocks.values() for f in b.transfers}
        out: list[Message] = []
        for key, f in pool.items():
            if key not in mined and key not in self._mempool:
                out.append(report(self.name, SEEN, f, None, 0))
            if key not in mined:
                self._mempool[key] = (f, 0)
        for key, (f, misses) in list(self._mempool.items()):
            if key in mined:
                del self._mempool[key]
            elif key not in pool:
                if misses + 1 >= MEMPOOL_MISSES:
                    out.append(report(self.name, ORPHANED, f, None, 0))
                    del self._mempool[key]
                else:
                    self._mempool[key] = (f, misses + 1)
        return out
