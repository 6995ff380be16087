"""Cross-checking the reader against other nodes before a transfer is confirmed.

With ``<NETWORK>_RPC_QUORUM=N`` (N > 1), the watcher still reads from one node (the pool's
reader), but its confirmed line, below which transfers are reported ``confirmed``, moves
only as far as N nodes agree, the reader and N-1 others. Another node agrees up to a
height ``h`` when:

- its own tip puts ``h`` at the required depth (``tip - h + 1 >= required``): a node that
  lags holds confirmations back (``kassa_rpc_node_lag_blocks``);
- its hash at ``h`` is the reader's: a block hash commits to every block below it, so
  the same hash is the same chain up to there;
- every block between the old line and ``h`` in which the reader found transfers holds the
  very same transfers there (tx, place, recipient, token, amount), as that node reads them
  with the same code (``Chain.history`` on it). A lying reader can invent a log or a
  transaction inside a real block as easily as a whole block; the second reading catches
  both.

A node that answers another hash or other transfers disagrees: it is logged (once per
streak) and counted (``kassa_rpc_node_disagreements_total``), and the line stays where
the agreeing nodes put it. So one node, lagging or lying, delays and never credits; a
reader whose chain differs from every other node's stops confirming until they agree.

The same holds for a late address's backfill: the transfers it finds below the confirmed
line are reported confirmed only once enough nodes read the same (``check_backfill``),
otherwise the backfill waits (``NoQuorum``) and is tried again after a backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import Node, NodePool
from kassa_common.chains.rpc import JsonRpc, RpcError, RpcUnavailable
from kassa_chain_watcher import metrics
from kassa_chain_watcher.chain import Block, Chain, ChainMoved

log = logging.getLogger("kassa.chain_watcher")


class NoQuorum(RpcUnavailable):
    """Too few nodes agree on what the reader found: try again later."""


class Quorum:
    def __init__(
        self, network: Network, pool: NodePool, chain_on: Callable[[JsonRpc], Chain], *, need: int | None = None
    ) -> None:
        self.network, self.pool, self.chain_on = network, pool, chain_on
        self.name, self.required = network.name, network.required_confirmations
        self.need = need if need is not None else network.rpc_quorum
        self._chains: dict[int, Chain] = {}  # a reader of each other node, by its index
        self._said: dict[int, str] = {}  # what was last logged about each node (once per streak)
        self._waiting = False  # pragma: no mutate

    def line(self, tip: int, line: int, floor: int, blocks: dict[int, Block]) -> int:
        """How far the confirmed line may move: ``line`` (the reader's) if enough nodes agree
        up to it, else the highest height they agree on, never below ``floor`` (the line now).
        ``blocks``: the stored blocks, every height above ``floor`` among them."""
        if self.need <= 1 or line <= floor:
            return line
        agreed = sorted((self._agreement(node, tip, line, floor, blocks) for node in self.pool.peers()), reverse=True)
        others = self.need - 1
        moved = agreed[others - 1] if len(agreed) >= others else floor
        if moved < line and not self._waiting:  # pragma: no mutate
            log.warning(
                "%s: confirmations held at block %d (the reader is at %d): %d of %d node(s) agree",
                self.name,
                moved,
                line,
                1 + sum(a >= line for a in agreed),
                self.need,
            )
        elif moved >= line and self._waiting:  # pragma: no mutate
            log.info("%s: %d node(s) agree up to block %d again", self.name, self.need, line)
        if moved < line:
            metrics.QUORUM_WAITS.labels(network=self.name).inc()
        self._waiting = moved < line  # pragma: no mutate
        return moved

    def check_backfill(self, blocks: Iterable[Block]) -> None:
        """Raise ``NoQuorum`` unless enough other nodes hold these blocks (past the required
        depth) with the same transfers in them."""
        blocks = list(blocks)
        if self.need <= 1 or not blocks:
            return
        agreeing = 0
        for node in self.pool.peers():
            try:
                their_tip = self._ask(node, lambda c: c.tip())
                if all(b.number <= their_tip - self.required + 1 and self._holds(node, b) for b in blocks):
                    agreeing += 1
            except (RpcError, ChainMoved):
                continue
        if agreeing < self.need - 1:
            said = agreeing + 1  # the reader too, in the message only  # pragma: no mutate
            raise NoQuorum(
                f"{self.name}: {said} of {self.need} node(s) agree on the transfers a backfill "
                f"found in block(s) {', '.join(str(b.number) for b in blocks)}",
                retry_after=1.0,
            )

    # -- one other node ---------------------------------------------------------------------
    def _agreement(self, node: Node, tip: int, line: int, floor: int, blocks: dict[int, Block]) -> int:
        """The highest height up to ``line`` that ``node`` agrees with the reader on (``floor``: none)."""
        try:
            their_tip = self._ask(node, lambda c: c.tip())
            metrics.NODE_LAG.labels(**node.labels(self.name)).set(max(0, tip - their_tip))
            top = min(line, their_tip - self.required + 1)
            if top <= floor:
                behind = tip - their_tip  # in the message only  # pragma: no mutate
                self._say(node, "lags", logging.WARNING, f"its tip {their_tip} is {behind} block(s) behind")
                return floor
            theirs = self._ask(node, lambda c: c.hashes([top])).get(top)
            if theirs != blocks[top].hash:
                return self._disagree(node, floor, f"block {top} is {theirs} there, {blocks[top].hash} on the reader")
            for n in sorted(n for n in blocks if floor < n <= top and blocks[n].transfers):
                if not self._holds(node, blocks[n]):
                    return self._disagree(node, n - 1, f"block {n} does not hold the transfers the reader found")
        except (RpcError, ChainMoved) as exc:  # it failed (set aside) or moved while asked: no agreement now
            self._say(node, type(exc).__name__, logging.INFO, f"no cross-check ({exc})")
            return floor
        self._say(node, "agrees", logging.INFO, f"agrees up to block {top}")
        return top

    def _holds(self, node: Node, block: Block) -> bool:
        """Does ``node`` read ``block`` (same hash) with every transfer the reader found in it?"""
        addresses = {f.to for f in block.transfers}
        native = {f.to for f in block.transfers if f.index < 0}
        found = self._ask(node, lambda c: c.history(block.number, block.number, addresses, native))
        theirs = next((b for b in found if b.number == block.number), None)
        return theirs is not None and theirs.hash == block.hash and set(block.transfers) <= set(theirs.transfers)

    def _ask(self, node: Node, fn: Callable[[Chain], object]):
        chain = self._chains.get(node.index)
        if chain is None:
            chain = self._chains[node.index] = self.chain_on(node.rpc)
        return self.pool.ask(node, lambda _rpc: fn(chain))

    def _disagree(self, node: Node, agreed: int, why: str) -> int:
        metrics.NODE_DISAGREEMENTS.labels(**node.labels(self.name)).inc()
        self._say(node, "disagrees", logging.WARNING, f"disagrees with the reader, {self.pool.where}: {why}")
        return agreed

    def _say(self, node: Node, kind: str, level: int, text: str) -> None:
        if self._said.get(node.index) != kind:  # pragma: no mutate
            log.log(level, "%s: %s %s", self.name, node.name, text)
        self._said[node.index] = kind
