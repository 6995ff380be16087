"""EVM chains: ERC-20 ``Transfer`` logs of the configured tokens via ``eth_getLogs`` over a
block range, native transfers from full blocks fetched in batched JSON-RPC requests.

Matching is a set lookup per log and per transaction, so the cost grows with the
number of transfers, not with the number of watched addresses. A transaction carrying
native coin to a watched address counts only if it succeeded: the receipts of those
transactions alone (a batched ``eth_getTransactionReceipt``) are read, and one that
reverted moved nothing. Native coin moved by a contract's internal call (no top-level
transaction to the address) is found through the balances of open native-coin payments'
addresses (``balances.py``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Container, Mapping
from typing import Any, NamedTuple

from kassa_common.chains.evm import TRANSFER_TOPIC, WORD, transfer_of
from kassa_common.chains.networks import Network
from kassa_common.chains.rpc import JsonRpc, RangeTooLarge
from kassa_chain_watcher.balances import InternalCredits
from kassa_chain_watcher.chain import Block, ChainMoved, Found

log = logging.getLogger("kassa.chain_watcher")
NATIVE = -1  # index of a native transfer by a transaction to the address itself
# Tuning: any positive values find the same transfers, in more or fewer requests.
ADDRESS_CHUNK = 100  # recipients per eth_getLogs topic filter  # pragma: no mutate
HISTORY_RANGE = 2000  # blocks per eth_getLogs call of a backfill  # pragma: no mutate
# The eth_getLogs window: providers cap a query's block range or result count (Infura 10,000
# logs, Alchemy a 2,000-block range or 150 MB, free tiers 10 blocks). On RangeTooLarge the
# window halves and the rest of the range is asked in smaller pieces; after GROW_AFTER
# answers in a row it doubles again, up to its maximum (HISTORY_RANGE by default).
GROW_AFTER = 4  # pragma: no mutate (tuning; the tests read it)


def normalize(address: str) -> str:
    return address.lower()


class EvmChain:
    def __init__(
        self,
        network: Network,
        rpc: JsonRpc,
        *,
        batch: int = 100,  # tuning  # pragma: no mutate
        log_range: int = HISTORY_RANGE,
    ) -> None:
        self.network, self.rpc, self.batch = network, rpc, batch
        self.max_log_range = self.log_range = max(1, log_range)  # blocks per eth_getLogs (GROW_AFTER)
        # eth_getLogs answered in a row since the window last changed; it starts at its
        # maximum, where the streak decides nothing until a refusal resets it.
        self._log_streak = 0  # pragma: no mutate
        self.tokens = {t.contract.lower(): t.symbol for t in network.tokens if t.contract}
        native = [t for t in network.tokens if t.native]
        self.native = native[0].symbol if native else None
        self.credits = InternalCredits(rpc, self.native or "", chunk=batch)  # native coin sent by contracts

    def tip(self) -> int:
        return int(self.rpc.call("eth_blockNumber"), 16)

    def hashes(self, numbers: list[int]) -> dict[int, str]:
        # Transactions (True) or only their hashes (False): the same block hash.
        heads = self.rpc.batch(
            [("eth_getBlockByNumber", [hex(n), False]) for n in numbers],  # pragma: no mutate
            chunk=self.batch,
        )
        return {n: h["hash"] for n, h in zip(numbers, heads, strict=False) if h}

    def mempool(self, watched: Container[str]) -> list[Found]:
        return []  # EVM transactions are reported once mined (1 confirmation)  # pragma: no mutate

    def blocks(self, start: int, end: int, watched: Container[str]) -> list[Block]:
        full = self.native is not None
        raw = self.rpc.batch(
            [("eth_getBlockByNumber", [hex(n), full]) for n in range(start, end + 1)], chunk=self.batch
        )
        blocks: list[Block] = []
        for n, b in enumerate(raw, start):
            if not b:
                raise ChainMoved(f"block {n} does not exist")
            if blocks and b["parentHash"] != blocks[-1].hash:
                raise ChainMoved(f"block {n} does not follow the block read before it")
            blocks.append(Block(n, b["hash"], b["parentHash"], self._native(b, watched) if full else []))
        if full:
            self._drop_reverted(blocks)
        if self.tokens:
            self._add_token_transfers(blocks, watched)
        if full:
            self.credits.add(blocks, getattr(watched, "native", ()))
        return blocks

    def _native(self, block: dict[str, Any], watched: Container[str]) -> list[Found]:
        assert self.native is not None  # read only on a network with a native coin
        found = []
        for tx in block["transactions"]:
            to = tx.get("to")
            if to and to.lower() in watched:
                value = int(tx["value"], 16)
                if value > 0:
                    sender = (tx.get("from") or "").lower() or None
                    found.append(Found(tx["hash"], NATIVE, self.native, to.lower(), value, sender=sender))
        return found

    def _drop_reverted(self, blocks: list[Block]) -> None:
        """Take out of ``blocks`` the native transfers of transactions that reverted (their
        value never left the sender), from the receipts of those transactions only."""
        native = [(b, f) for b in blocks for f in b.transfers if f.index == NATIVE]
        if not native:
            return
        receipts = self.rpc.batch([("eth_getTransactionReceipt", [f.tx_hash]) for _, f in native], chunk=self.batch)
        reverted = set()
        for (block, f), receipt in zip(native, receipts, strict=False):
            if not receipt or str(receipt.get("blockHash", "")).lower() != block.hash.lower():
                raise ChainMoved(f"transaction {f.tx_hash} is no longer in block {block.number}")
            if not _succeeded(receipt):
                log.info(
                    "%s: transaction %s to %s reverted: its %d wei credit nothing",
                    self.network.name,
                    f.tx_hash,
                    f.to,
                    f.amount_units,
                )
                reverted.add(f.identity)
        if reverted:
            for block in blocks:
                block.transfers = [f for f in block.transfers if f.identity not in reverted]

    def _add_token_transfers(self, blocks: list[Block], watched: Container[str]) -> None:
        by_number = {b.number: b for b in blocks}
        for number, block_hash, found in self._token_transfers(blocks[0].number, blocks[-1].number, watched):
            block = by_number.get(number)
            if block is None or block_hash != block.hash:
                raise ChainMoved(f"log of block {number} is from another fork")
            block.transfers.append(found)
        for block in blocks:
            block.transfers.sort(key=lambda f: f.index)

    def _token_transfers(
        self, start: int, end: int, watched: Container[str], *, recipients: list[str] | None = None
    ) -> list[tuple[int, str, Found]]:
        """Transfer logs of the configured tokens to ``watched`` in ``start..end``: (block, hash, found).

        ``recipients`` narrows the query itself to those addresses (the ``to`` topic), for
        backfills over long ranges. A log's ``position`` is its rank among its transaction's
        transfer logs to the same address: both kinds of query see all of those.
        """
        topics: list = [TRANSFER_TOPIC]
        if recipients:
            topics += [None, ["0x" + a[2:].rjust(64, "0") for a in recipients]]
        logs = self._get_logs(start, end, {"address": list(self.tokens), "topics": topics})
        live = [g for g in logs if not (isinstance(g, dict) and g.get("removed"))]
        decoded = (transfer_log(g, self.tokens) for g in live)
        kept = [t for t in decoded if t is not None and start <= t.block <= end]
        if len(kept) < len(live):  # a broken or lying node's answer: never a reason to stop scanning
            log.warning(
                "%s: eth_getLogs of blocks %d..%d answered %d log(s) that are no Transfer of a configured "
                "token in that range (another contract, a malformed log, another block): passed over",
                self.network.name,
                start,
                end,
                len(live) - len(kept),
            )
        out: list[tuple[int, str, Found]] = []
        ranks: dict[tuple[str, str], int] = {}
        for t in sorted(kept, key=lambda t: (t.block, t.log_index)):
            if t.to not in watched:
                continue
            rank = ranks[(t.tx_hash, t.to)] = ranks.get((t.tx_hash, t.to), -1) + 1
            found = Found(t.tx_hash, t.log_index, t.token, t.to, t.amount, rank, sender=t.sender)
            out.append((t.block, t.block_hash, found))
        return out

    def _get_logs(self, start: int, end: int, query: dict[str, Any]) -> list[dict[str, Any]]:
        """``eth_getLogs`` of ``query`` over ``start..end``, ``log_range`` blocks per call, in
        block order. A range the node refuses as too large is asked again in halves (the
        window stays smaller for the next calls); a single block refused raises RangeTooLarge."""
        logs: list[dict[str, Any]] = []
        lo = start
        while lo <= end:
            hi = min(end, lo + self.log_range - 1)
            try:
                logs += self.rpc.call("eth_getLogs", {**query, "fromBlock": hex(lo), "toBlock": hex(hi)})
            except RangeTooLarge as exc:
                if hi == lo:
                    raise RangeTooLarge(f"eth_getLogs of block {lo} alone is too large: {exc}") from exc
                self.log_range, self._log_streak = (hi - lo + 1) // 2, 0  # hi > lo: one block at least
                continue
            lo = hi + 1
            self._log_streak += 1
            if self._log_streak >= GROW_AFTER and self.log_range < self.max_log_range:
                self.log_range, self._log_streak = min(self.max_log_range, self.log_range * 2), 0
        return logs

    def history(self, start: int, end: int, addresses: Collection[str], native: Collection[str] = ()) -> list[Block]:
        """Backfill for newly watched addresses: their token transfers through ``eth_getLogs``
        narrowed to them (``ADDRESS_CHUNK`` at a time), native ones from full blocks, and
        native coin that reached ``native`` (open native-coin payments) from contracts."""
        found: dict[int, Block] = {}
        wanted = sorted(addresses)
        for i in range(0, len(wanted), ADDRESS_CHUNK):
            chunk = wanted[i : i + ADDRESS_CHUNK]
            for lo in range(start, end + 1, HISTORY_RANGE):
                for number, block_hash, f in self._token_transfers(
                    lo, min(end, lo + HISTORY_RANGE - 1), set(chunk), recipients=chunk
                ):
                    found.setdefault(number, Block(number, block_hash, "")).transfers.append(f)
        if self.native is not None:
            read: list[Block] = []  # every block of the range, for the balances of ``native``
            for lo in range(start, end + 1, self.batch):
                raw = self.rpc.batch(
                    [("eth_getBlockByNumber", [hex(n), True]) for n in range(lo, min(end, lo + self.batch - 1) + 1)],
                    chunk=self.batch,
                )
                for n, b in enumerate(raw, lo):
                    if not b or (read and b["parentHash"] != read[-1].hash):
                        raise ChainMoved(f"block {n} changed during a backfill")
                    read.append(Block(n, b["hash"], b["parentHash"], self._native(b, addresses)))
            self._drop_reverted(read)
            self.credits.add(read, [a for a in native if a in addresses], follow=False)
            for b in read:
                if b.transfers:
                    found.setdefault(b.number, Block(b.number, b.hash, "")).transfers.extend(b.transfers)
        return [found[n] for n in sorted(found)]

    def close(self) -> None:
        self.rpc.close()


class TransferLog(NamedTuple):
    """An ERC-20 ``Transfer(address,address,uint256)`` log of a configured token, decoded."""

    block: int
    block_hash: str
    tx_hash: str
    log_index: int
    token: str  # the configured token's symbol
    to: str  # lower case
    amount: int  # base units: at most 2**256 - 1
    sender: str | None = None  # lower case: the ``from`` topic


QUANTITY = re.compile(r"0x[0-9a-fA-F]{1,16}")  # a block number or log index


def transfer_log(entry: Any, tokens: Mapping[str, str]) -> TransferLog | None:
    """``entry`` decoded if it is a Transfer log of a token in ``tokens`` (contract → symbol)
    as ``kassa_common.chains.evm.transfer_of`` reads one (a node may answer logs it was not
    asked for, removed or malformed ones), with a block, an index and hashes that are what a
    node sends; else None. One node's bad answer never raises: it is passed over, and the
    quorum, where configured, holds back what it alone reports."""
    found = transfer_of(entry, tokens)
    if found is None:
        return None
    block, index = entry.get("blockNumber"), entry.get("logIndex")
    block_hash, tx_hash = entry.get("blockHash"), entry.get("transactionHash")
    if not (
        isinstance(block, str) and QUANTITY.fullmatch(block) and isinstance(index, str) and QUANTITY.fullmatch(index)
    ):
        return None
    if not (isinstance(block_hash, str) and isinstance(tx_hash, str) and WORD.fullmatch(tx_hash)):
        return None  # (a block hash is compared with the block's own: a wrong one is another fork)
    return TransferLog(
        int(block, 16), block_hash, tx_hash, int(index, 16), found.token, found.to, found.amount, found.sender
    )


def _succeeded(receipt: dict[str, Any]) -> bool:
    """A receipt's ``status`` (EIP-658): 0x1 succeeded, 0x0 reverted. Receipts of blocks
    before Byzantium have none (a state root instead): those transactions were not undone."""
    status = receipt.get("status")
    return status is None or int(status, 16) == 1
