"""Native coin that reaches an address without a transaction to it.

A Safe, a smart-contract wallet or an exchange's batch payout sends ETH to a payment's
address from inside a contract call: no top-level transaction names the address, so
reading the blocks' transactions never sees it. The EVM watcher therefore also follows
the balances of the addresses of open native-coin payments (a handful, next to every
watched address):

- for the blocks just read, one batched ``eth_getBalance`` per address at the range's
  end (the start's balance is the previous range's end, remembered); a rise that the
  range's top-level transfers to the address do not explain is native coin that arrived
  from inside a contract;
- that rise is narrowed to its block by bisection (balances in the middle of the range,
  pinned to block hashes, EIP-1898), then to its transactions by the node's call traces
  (``trace_block``, else ``debug_traceBlockByNumber`` with the call tracer);
- only value that really arrived is credited. A call frame that reverted moved nothing,
  nor did anything below it, at any depth: parity traces mark only the frame that failed
  (its children look successful), so every call under a failed ``traceAddress`` is pruned
  (``calls_from_parity``); the call tracer nests calls, and a failed frame's subtree is
  skipped (``calls_from_call_tracer``). And the credits found for an address in a block are
  capped by its balance rise there (``capped``): traces never explain more than arrived;
- each such credit is a transfer identified by what it is: its transaction, its recipient
  and its rank among that transaction's internal credits to the recipient (``log_index``
  -2, -3, …), so a reorg that moves it to another block counts it once, and a transaction
  paying several payments (a batch payout) credits each. A node with neither trace method
  gives a transfer identified by its block instead (``tx_hash`` the block hash, amount the
  unexplained rise): still counted once per block, but a deep reorg that moves it could
  count it again; use a node with traces for such payments.

Assumes the address pays nothing out while its payment is open (a fresh HD child or a
forwarder deposit): an outflow in the same range hides as much credit.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Iterable
from typing import Any

from kassa_common.chains.rpc import JsonRpc, RpcError, RpcUnavailable
from kassa_chain_watcher.chain import Block, ChainMoved, Found

log = logging.getLogger("kassa.chain_watcher")
TOP_LEVEL = -1  # log_index of a transaction's own value to the address (evm.NATIVE)
INTERNAL = -2  # log_index of a transaction's first internal credit to an address; the next is -3, …
Call = tuple[str, str, int]  # (tx hash, recipient, value) of a call that moved native coin


class InternalCredits:
    def __init__(
        self, rpc: JsonRpc, symbol: str, *, chunk: int = 100
    ) -> None:  # EvmChain passes its own  # pragma: no mutate
        self.rpc, self.symbol, self.chunk = rpc, symbol, chunk
        self._tracers = ["trace_block", "debug_traceBlockByNumber"]  # those the node turned down are dropped
        self._last: dict[str, tuple[str, int]] = {}  # address -> (block hash, balance) at the last range's end

    def add(self, blocks: list[Block], addresses: Collection[str], *, follow: bool = True) -> None:
        """Add to ``blocks`` (consecutive, linked by parent hash) the native coin that reached
        ``addresses`` (normalised) from inside contracts. ``follow``: these blocks continue
        the chain the watcher follows (their end balances start the next range); a backfill
        passes False."""
        wanted = sorted(addresses)
        if not blocks or not wanted:
            if follow:
                self._last = {}
            return
        first, last = blocks[0], blocks[-1]
        remembered = self._last if follow else {}
        before = {a: bal for a, (h, bal) in remembered.items() if h == first.parent_hash}
        ask = [(a, first.parent_hash) for a in wanted if a not in before] + [(a, last.hash) for a in wanted]
        got = self._balances(ask)
        before.update({a: got[(a, first.parent_hash)] for a in wanted if (a, first.parent_hash) in got})
        after = {a: got[(a, last.hash)] for a in wanted}
        if follow:
            self._last = {a: (last.hash, bal) for a, bal in after.items()}
        top = {
            a: [sum(f.amount_units for f in b.transfers if f.to == a and f.index == TOP_LEVEL) for b in blocks]
            for a in wanted
        }
        traces: dict[str, list[tuple[str, str, int]]] = {}
        for a in wanted:
            self._split(a, blocks, 0, len(blocks) - 1, before[a], after[a], top[a], traces)

    def _split(
        self, address: str, blocks: list[Block], lo: int, hi: int, start: int, end: int, top: list[int], traces: dict
    ) -> None:
        """Find the blocks of ``blocks[lo..hi]`` where ``address`` gained more than its
        top-level transfers brought (``start``/``end``: its balance before and after them)."""
        unexplained = end - start - sum(top[lo : hi + 1])
        if unexplained <= 0:
            return
        if lo == hi:
            self._credit(blocks[lo], address, unexplained, traces)
            return
        mid = (lo + hi) // 2
        middle = self._balances([(address, blocks[mid].hash)])[(address, blocks[mid].hash)]
        self._split(address, blocks, lo, mid, start, middle, top, traces)
        self._split(address, blocks, mid + 1, hi, middle, end, top, traces)

    def _credit(self, block: Block, address: str, unexplained: int, traces: dict) -> None:
        if block.hash not in traces:
            traces[block.hash] = self._internal_calls(block)
        traced = credits_to(traces[block.hash], address, self.symbol)
        found = capped(traced, unexplained)
        if found != traced:  # only logged  # pragma: no mutate
            log.warning(
                "native coin from a contract: traces of block %d claim %d for %s, its balance rose by %d: capped",
                block.number,
                sum(f.amount_units for f in traced),
                address,
                unexplained,
            )
        if not found:  # no traces on this node: the block's unexplained rise, identified by the block
            found = [Found(block.hash, INTERNAL, self.symbol, address, unexplained)]
        log.info(
            "native coin from a contract: %s in block %d: %s",
            address,
            block.number,
            ", ".join(f"{f.tx_hash} ({f.amount_units})" for f in found),
        )
        known = {f.identity for f in block.transfers}
        block.transfers.extend(f for f in found if f.identity not in known)

    # -- node calls -----------------------------------------------------------------------
    def _balances(self, wanted: list[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Balance of each (address, block hash), in one batched request."""
        results = self.rpc.batch([("eth_getBalance", [a, {"blockHash": h}]) for a, h in wanted], chunk=self.chunk)
        return {w: int(r, 16) for w, r in zip(wanted, results, strict=False)}

    def _internal_calls(self, block: Block) -> list[Call]:
        """Every call below a transaction's top level in ``block`` that moved native coin and
        was not undone, in execution order; [] when the node traces nothing."""
        while self._tracers:
            method = self._tracers[0]
            try:
                if method == "trace_block":
                    return calls_from_parity(self.rpc.call("trace_block", hex(block.number)), block.hash)
                frames = self.rpc.call("debug_traceBlockByNumber", hex(block.number), {"tracer": "callTracer"})
                if any(not f.get("txHash") for f in frames or []):  # older nodes: hashes in block order
                    frames = [{**f, "txHash": tx} for f, tx in zip(frames, self._tx_hashes(block), strict=False)]
                return calls_from_call_tracer(frames)
            except RpcError as exc:
                if not _unsupported(exc):
                    raise
                log.warning("the node does not offer %s (%s); internal transfers are identified by block", method, exc)
                self._tracers.pop(0)
        return []

    def _tx_hashes(self, block: Block) -> list[str]:
        raw = self.rpc.call("eth_getBlockByHash", block.hash, False)
        return list(raw["transactions"]) if raw else []


def _unsupported(exc: RpcError) -> bool:
    """The node said it has no such method (not: it is busy or away)."""
    text = str(exc).lower()
    said = (
        "not found",
        "not supported",
        "unsupported",
        "does not exist",
        "not available",
        "-32601",
        "method not allowed",
    )
    return not isinstance(exc, RpcUnavailable) and any(s in text for s in said)


def credits_to(calls: Iterable[Call], address: str, symbol: str) -> list[Found]:
    """The credits of ``calls`` (execution order) to ``address``: one per call, its
    ``log_index`` ranking it among its transaction's calls to ``address`` (-2, -3, …)."""
    found: list[Found] = []
    ranks: dict[str, int] = {}
    for tx, to, value in calls:
        if to == address:  # both readers of traces keep only calls that moved value
            rank = ranks[tx] = ranks.get(tx, -1) + 1
            found.append(Found(tx, INTERNAL - rank, symbol, address, value))
    return found


def capped(found: list[Found], rise: int) -> list[Found]:
    """``found`` (one address's credits in one block, in execution order) within ``rise``, the
    balance rise they are to explain: each credit keeps as much as the rise still explains,
    those past it are dropped. Traces that claim more than arrived (a frame they do not mark
    as undone, value that left again in the same block) never credit more than arrived."""
    out, left = [], max(0, rise)
    for f in found:
        if left <= 0:
            break  # (``continue`` would skip the rest one by one)  # pragma: no mutate
        amount = min(f.amount_units, left)
        out.append(f if amount == f.amount_units else dataclasses.replace(f, amount_units=amount))
        left -= amount
    return out


def calls_from_parity(traces: list[dict[str, Any]] | None, block_hash: str) -> list[Call]:
    """The value-moving calls of ``trace_block``'s answer, below each transaction's top level.

    Only the frame that failed carries ``error``; the calls it made succeeded as far as their
    own traces say, and were undone with it. So a call counts only if no frame on its path
    (its ``traceAddress`` prefixes, down from the transaction's own call) failed."""
    traces = traces or []
    if any(t.get("blockHash") not in (None, block_hash) for t in traces):
        raise ChainMoved(f"traces of another block than {block_hash}")
    failed = {(t.get("transactionHash"), tuple(t.get("traceAddress") or ())) for t in traces if t.get("error")}
    out = []
    for t in traces:
        tx, at = t.get("transactionHash"), tuple(t.get("traceAddress") or ())
        prefixes = range(len(at) + 1)  # of ``at``, itself included (one more is ``at`` again)  # pragma: no mutate
        if not at or any((tx, at[:depth]) in failed for depth in prefixes):
            continue  # the top-level call itself, or undone with a frame that failed (at any depth)
        action = t.get("action") or {}
        if t.get("type") == "call" and action.get("callType") in (None, "call"):
            to, value = action.get("to"), action.get("value")
        elif t.get("type") == "create":
            to, value = (t.get("result") or {}).get("address"), action.get("value")
        elif t.get("type") == "suicide":
            to, value = action.get("refundAddress"), action.get("balance")
        else:
            continue  # delegatecall, staticcall, callcode: no value moves to another address
        wei = int(value, 16) if value else 0
        if tx and to and wei:
            out.append((tx, to.lower(), wei))
    return out


def calls_from_call_tracer(results: list[dict[str, Any]] | None) -> list[Call]:
    """The value-moving calls of geth's call tracer (``debug_traceBlockByNumber``), below each
    transaction's top level: a frame with ``error`` is skipped with every call nested in it."""
    out: list[Call] = []

    def walk(tx: str, frame: dict[str, Any]) -> None:
        for call in frame.get("calls") or []:
            if call.get("error"):
                continue  # a reverted call moved nothing (nor did anything below it)
            if (
                call.get("type") in ("CALL", "CREATE", "CREATE2", "SELFDESTRUCT")
                and call.get("to")
                and int(call.get("value") or "0x0", 16)
            ):
                out.append((tx, call["to"].lower(), int(call["value"], 16)))
            walk(tx, call)

    for r in results or []:
        tx, frame = r.get("txHash"), r.get("result") or {}
        if tx and not frame.get("error") and not r.get("error"):
            walk(tx, frame)
    return out
