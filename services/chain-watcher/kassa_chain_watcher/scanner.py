"""Following one network: scan new blocks, count confirmations, follow reorgs.

One ``tick``:

1. Reorg check: the stored head's hash must still be the chain's hash at that height
   (and each new block's parent must be the stored head). If not, walk back through
   the stored recent blocks to the highest one still on the best chain (the fork
   point), report the transfers of the blocks above it as orphaned, forget them.
2. Addresses that arrived since the last tick are backfilled from the height this
   network's watcher stood at when their payment was created (``Payment.created_block`` on
   the payment's own network, its ``watch_points`` entry on another one that watches the
   address for funds sent on the wrong network; the stored blocks if unknown):
   ``Chain.history`` finds their transfers; those in blocks already past the confirmed
   line are reported confirmed at once, the others join their stored block.
3. Up to ``batch_blocks`` new blocks are read and stored with their matching transfers
   (all of them: the store keeps every block above the confirmed line).
4. Every stored transfer above the confirmed line is reported, in block order: ``seen``
   with its confirmation count while below the network's required confirmations, then
   ``confirmed`` once; the line moves up only after that was published (with
   confirms). A tick that reported everything up to the tip it read records when it read
   it (``scanned_at``). With an RPC quorum (``quorum.py``) the line moves only as far as
   enough nodes agree on the block there and on the transfers below it; until then they
   stay ``seen``.
5. Unconfirmed transfers (the mempool, where the chain has one) are reported ``seen``
   when they appear and ``orphaned`` when they leave it unmined (``mempool.py``); what was
   reported is stored, so a restart misses no dropped or replaced transaction.
6. Every batch of reports, once the broker confirmed it, is recorded in the reports ledger;
   a tick that read the tip with everything below it reported, and recorded reports or
   recorded ``scanned_at``, ends with a watermark (``messages.ChainWatermark``: the ledger's
   highest number and the time it read the tip). The settler moves the network's settled
   line only once every report the watermark covers is applied, and the expirer expires a
   payment only once that line passed its expiry (``kassa_common.payments.watermark``).

A reorg that reaches below the confirmed line (deeper than the required confirmations)
cannot take back what was confirmed, and is never kept silent: each confirmed transfer
of the replaced blocks is reported ``reorged`` (the settler records it as lost on its
payment and fires ``payment.reorged``), with an ERROR log and ``kassa_chain_deep_reorgs_total``.
If the transaction is mined again it is found and confirmed again like any transfer.

Reports are ``messages.TransferReport``s; their ids are derived from (network, tx, index,
recipient, place, block hash, status, confirmations), so a restart or a retry re-publishes
only messages the settler already recognises, and the transfers of one transaction to
several payments (a batch payout) are as many messages. A mempool report's id also holds
its sighting's token: the same transaction dropped and broadcast again is seen (and maybe
dropped) again.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable

from kassa_common.chains.networks import Network
from kassa_common.messaging.messages import ChainWatermark, TransferReport
from kassa_common.messaging.publisher import Message
from kassa_common.statuses import TransferStatus
from kassa_common.timefmt import utcnow
from kassa_chain_watcher import mempool, metrics
from kassa_chain_watcher.chain import Block, Chain, ChainMoved, Found
from kassa_chain_watcher.store import Store
from kassa_chain_watcher.watchlist import Watchlist

log = logging.getLogger("kassa.chain_watcher")
SEEN, CONFIRMED, ORPHANED, REORGED = TransferStatus
SCANNED_AT_EVERY = 1.0  # seconds between cursor writes of an idle, caught-up watcher


def report(
    network: str, status: TransferStatus, f: Found, block: Block | None, confirmations: int, sighting: str = ""
) -> Message:
    """The report's message; ``sighting``: the token of an unconfirmed transfer's stay in the
    mempool (``mempool.py``), part of its id so that a transaction seen again is news."""
    r = TransferReport(
        status,
        network,
        f.tx_hash,
        f.index,
        f.token,
        f.to,
        f.amount_units,
        block.number if block else None,
        block.hash if block else None,
        confirmations,
        f.position,
        sender=f.sender,
    )
    if not sighting:
        return r.to_message()
    digest = hashlib.sha256(f"{r.default_id()}:{sighting}".encode()).hexdigest()[:40]  # pragma: no mutate
    return r.to_message("cw_" + digest)


class Scanner:
    def __init__(
        self,
        network: Network,
        chain: Chain,
        store: Store,
        watchlist: Watchlist,
        publish: Callable[[list[Message]], None],
        *,
        batch_blocks: int = 500,  # pragma: no mutate
        start_back: int | None = None,
        quorum=None,
    ) -> None:
        self.network, self.chain, self.store, self.watchlist, self.publish = network, chain, store, watchlist, publish
        self.name = network.name
        self.required = network.required_confirmations
        self.batch_blocks = batch_blocks
        self.start_back = start_back if start_back is not None else self.required + 1
        self.quorum = quorum  # quorum.Quorum: other nodes must agree before a transfer is confirmed
        self.state = store.load()
        self._published: dict[tuple[str, str, str, int], tuple[str, int]] = {}  # (block, *identity) -> report
        self._mempool = store.load_mempool()
        self._through = store.reports_through()  # the reports ledger's highest number (a watermark's)
        self._recorded = False  # reports were recorded since the last watermark  # pragma: no mutate

    def tick(self) -> bool:
        """One step; True when there is more to do right away (catching up, chain moved)."""
        read_at = utcnow()
        tip = self.chain.tip()
        st = self.state
        if st.head is None:  # first start on this network: begin just below the tip
            st.head = max(-1, tip - self.start_back)
            self.store.confirm_through(st, st.head)
        # The chain got shorter below what we kept (at ``head == tip`` this writes the same values).
        elif st.head > tip and st.head_hash is None:  # pragma: no mutate
            st.head = tip
            self.store.confirm_through(st, min(st.confirmed_through, tip))
        try:
            if self._head_replaced(tip):
                self._rewind_to_fork()
                return True
            self._backfill_new_addresses()
            end = min(tip, st.head + self.batch_blocks)
            if end > st.head:
                new = self.chain.blocks(st.head + 1, end, self.watchlist)
                if st.head_hash and new[0].parent_hash != st.head_hash:
                    self._rewind_to_fork()
                    return True
                self.store.append(st, new)
            self._report(tip, read_at)
        except ChainMoved as exc:
            log.info("%s: chain moved while reading (%s); reading again", self.name, exc)
            return True
        return st.head < tip

    # -- reorgs ---------------------------------------------------------------------------
    def _head_replaced(self, tip: int) -> bool:
        st = self.state
        return (
            st.head is not None
            and st.head_hash is not None
            and (tip < st.head or self.chain.hashes([st.head]).get(st.head) != st.head_hash)
        )

    def _rewind_to_fork(self) -> None:
        st = self.state
        heights = sorted(st.blocks, reverse=True)
        on_chain = self.chain.hashes(heights)
        fork = next((n for n in heights if on_chain.get(n) == st.blocks[n].hash), None)
        if fork is None:
            fork = min(heights) - 1
            log.error("%s: reorg deeper than the %d blocks kept; resuming from %d", self.name, len(heights), fork)
        dropped = [st.blocks[n] for n in heights if n > fork]
        orphans = [
            report(self.name, REORGED, f, b, self.required)
            if b.number <= st.confirmed_through
            else report(self.name, ORPHANED, f, b, 0)
            for b in reversed(dropped)
            for f in b.transfers
        ]
        if fork < st.confirmed_through:
            self._deep_reorg(fork, [b for b in dropped if b.number <= st.confirmed_through])
        if orphans:
            self._publish(orphans)
        log.warning(
            "%s: reorg, %d block(s) above %d replaced, %d transfer(s) orphaned",
            self.name,
            len(dropped),
            fork,
            len(orphans),
        )
        self.store.rewind(st, fork)
        gone = {b.hash for b in dropped}
        self._published = {k: v for k, v in self._published.items() if k[0] not in gone}

    def _deep_reorg(self, fork: int, confirmed: list[Block]) -> None:
        lost = [f for b in confirmed for f in b.transfers]
        metrics.DEEP_REORGS.labels(network=self.name).inc()
        metrics.TRANSFERS_REORGED.labels(network=self.name).inc(len(lost))
        log.error(
            "%s: reorg below the confirmed line (fork at %d, confirmed through %d, %d confirmation(s) "
            "required): %d confirmed transfer(s) lost, reported reorged: %s",
            self.name,
            fork,
            self.state.confirmed_through,
            self.required,
            len(lost),
            ", ".join(f"{f.tx_hash} to {f.to}" for f in lost) or "none",
        )

    # -- late addresses -------------------------------------------------------------------
    def _backfill_new_addresses(self) -> None:
        new = self.watchlist.take_new()  # ``tick`` has set the head by now
        if not new:
            return
        try:
            old = self._backfill(new)
            if old:
                self._publish(old)
        except Exception:
            self.watchlist.requeue(new)  # tried again next tick
            raise
        log.info(
            "%s: %d new address(es) backfilled, %d transfer(s) found past the confirmed line",
            self.name,
            len(new),
            len(old),
        )

    def _backfill(self, new: set[str]) -> list[Message]:
        """Find the transfers to ``new`` since their payments were created; return the reports
        of those already past the confirmed line (the others join their stored block)."""
        st = self.state
        assert st.head is not None  # scanning has begun
        window = min(st.blocks, default=math.inf)  # nothing kept: only the payments' creation blocks
        start = min([b for b in self.store.created_blocks(new).values() if b is not None and b >= 0] + [window])
        if start > st.head:
            return []
        found = self.chain.history(int(start), st.head, new, self.watchlist.native & new)
        for b in found:
            stored = st.blocks.get(b.number)
            if stored is not None and stored.hash != b.hash:
                raise ChainMoved(f"block {b.number} changed during a backfill")
        confirmed = [b for b in found if b.number <= st.confirmed_through]
        if self.quorum is not None:
            self.quorum.check_backfill(confirmed)  # before anything of them is kept or reported
        for b in found:
            stored = st.blocks.get(b.number)
            if stored is not None:  # kept (a deep reorg of it must know its transfers too), or above the line
                known = {f.identity for f in stored.transfers}
                added = [f for f in b.transfers if f.identity not in known]
                if added:
                    self.store.set_transfers(st, Block(b.number, b.hash, stored.parent_hash, stored.transfers + added))
        return [report(self.name, CONFIRMED, f, b, self.required) for b in confirmed for f in b.transfers]

    # -- reports --------------------------------------------------------------------------
    def _report(self, tip: int, read_at) -> None:
        st = self.state
        assert st.head is not None  # scanning has begun
        messages: list[Message] = []
        pending: list[tuple[tuple[str, str, str, int], tuple[str, int]]] = []
        line = min(tip - self.required + 1, st.head)
        if self.quorum is not None and line > st.confirmed_through:
            line = self.quorum.line(tip, line, st.confirmed_through, st.blocks)
        for n in sorted(st.blocks):
            if n <= st.confirmed_through:
                continue
            block = st.blocks[n]
            confs = tip - n + 1
            kind, confs = (CONFIRMED, self.required) if n <= line else (SEEN, min(confs, self.required - 1))
            for f in block.transfers:
                key = (block.hash, *f.identity)
                if self._published.get(key) != (kind, confs):
                    messages.append(report(self.name, kind, f, block, confs))
                    pending.append((key, (kind, confs)))
        pool = self._look_at_mempool(at_tip=st.head >= tip)
        if pool is not None:
            messages += [report(self.name, SEEN, p.found, None, 0, p.token) for p in pool.seen]
            messages += [report(self.name, ORPHANED, p.found, None, 0, p.token) for p in pool.gone]
        if messages:
            self._publish(messages)
            self._published.update(pending)
        if pool is not None:
            self.store.save_mempool(self._mempool, pool.after)
            self._mempool = pool.after
        caught_up = read_at if st.head >= tip else None
        scanned = line > st.confirmed_through or (caught_up and self._due_scanned_at(caught_up))
        if scanned:
            self.store.confirm_through(st, max(line, st.confirmed_through), scanned_at=caught_up)
            done = {st.blocks[n].hash for n in st.blocks if n <= line}
            self._published = {k: v for k, v in self._published.items() if k[0] not in done}
        if caught_up and (scanned or self._recorded):
            self.publish([ChainWatermark(self.name, self._through, caught_up).to_message()])
            self._recorded = False

    def _publish(self, messages: list[Message]) -> None:
        """Publish reports (confirmed by the broker), then record them in the reports ledger
        (``kassa_common.payments.watermark``): a watermark covers them from then on."""
        self.publish(messages)
        through = self.store.record_reports([m.message_id for m in messages])
        if through is not None:
            self._through = max(self._through, through)
        self._recorded = True

    def _due_scanned_at(self, read_at) -> bool:
        """Record an idle watcher's progress now and then, not on every poll."""
        last = self.state.scanned_at
        return last is None or (read_at - last).total_seconds() >= SCANNED_AT_EVERY

    def _look_at_mempool(self, *, at_tip: bool) -> mempool.Step | None:
        pool = self.chain.mempool(self.watchlist)
        if not pool and not self._mempool:
            return None
        mined = {f.key for b in self.state.blocks.values() for f in b.transfers}
        return mempool.look(self._mempool, pool, mined, at_tip=at_tip)
