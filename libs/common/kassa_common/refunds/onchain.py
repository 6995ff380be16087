"""Reading one transaction from its network's nodes, for ``payouts.complete_with_hash``: the
transfers it makes, each as the chain watcher would report it (the same place inside the
transaction, so the same ``transfer_ref``), with its sender, block and confirmations.

Under ``<NETWORK>_RPC_QUORUM=N`` (N > 1) the transaction is read like the watcher confirms:
on the pool's reader and on the other nodes in service, and a transfer counts only when N
nodes read the very same one (transaction, place, recipient, token, amount, sender, block
hash); its confirmations are the N-th highest of theirs. One node, lying or lagging, can
then neither invent a payout nor hurry one (``QuorumShort``, 409: submit it again later).

EVM: the receipt's ERC-20 ``Transfer`` logs of the network's tokens (ranked per recipient
like ``kassa_chain_watcher.evm``), and the transaction's own native value; a transaction that
reverted moved nothing. Native coin sent from inside a contract call is not read here (it
needs the node's traces): the watcher finds it. Bitcoin: the transaction's outputs
(``getrawtransaction`` verbose, which a node answers for mempool transactions and, with
``-txindex``, for mined ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kassa_common.chains.evm import transfer_of
from kassa_common.chains.networks import Network, shipped
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcError, RpcUnavailable
from kassa_common.chains.utxo import output_address
from kassa_common.errors import DomainError, InvalidTransition

if TYPE_CHECKING:
    from kassa_common.models import Refund

SATS = Decimal(100_000_000)


class PayoutRefused(DomainError):
    """The submitted transaction does not pay this refund (400)."""

    code = "VALIDATION_ERROR"


class PayoutConflict(InvalidTransition):
    """It may pay it, but not now or not this one: unconfirmed, or paying another refund (409)."""


@dataclass(frozen=True)  # pragma: no mutate
class Payout:
    """A transfer that may pay a refund, as the watcher reports it or as read from a hash."""

    network: str
    tx_hash: str
    place: int  # its place inside its transaction (log rank, -1 native, vout): ``Found.place``
    token: str
    to: str
    amount_units: int
    block_number: int | None
    block_hash: str | None
    confirmations: int
    sender: str | None = None  # who sent it, where the chain says (None: Bitcoin, a simulation)

    @property
    def ref(self) -> str:
        return transfer_ref(self.tx_hash, self.place, self.to)

    @property
    def what(self) -> tuple[object, ...]:
        """What nodes must agree on: all of it but the confirmations (each node's own tip)."""
        return (self.ref, self.token.upper(), self.to.lower(), self.amount_units, self.block_hash, self.sender)


def transfer_ref(tx_hash: str, place: int, to: str) -> str:
    """What a transfer is, wherever a reorg puts it: ``<tx>:<place>``, and on EVM ``:<recipient>``
    too (one transaction may pay several addresses, each at place 0 of its own logs)."""
    ref = f"{tx_hash.lower()}:{place}"
    return f"{ref}:{to.lower()}" if to.lower().startswith("0x") else ref


class QuorumShort(PayoutConflict):
    """Fewer nodes than the network's RPC quorum read the transfer the same: not now (409)."""


class ChainUnavailable(DomainError):
    """The network's node did not answer: the check cannot be made now (503, ``Retry-After``)."""

    code = "SERVICE_UNAVAILABLE"
    retry_after = 10


@dataclass
class Reader:
    network: Network
    rpc: Any  # JsonRpc or NodePool

    @property
    def required(self) -> int:
        return self.network.required_confirmations

    def close(self) -> None:
        self.rpc.close()


def kind_of(network: str, reader: Reader | None) -> str:
    """The kind of the network named ``network`` (evm, or bitcoin for Bitcoin and Litecoin
    alike), as its reader or the shipped configuration says."""
    net = reader.network if reader is not None else shipped().get(network)
    return net.kind if net is not None else "evm"


def reader_for(network: Network | None) -> Reader | None:
    """A reader of ``network`` over its nodes (None: no node configured)."""
    if network is None or not network.nodes:
        return None
    return Reader(network, NodePool(network, version="2.0" if network.kind == "evm" else "1.0"))


def transfers_in(reader: Reader, tx_hash: str, refund: Refund | None = None) -> list[Payout]:
    """Every transfer of the transaction ``tx_hash`` that the network's RPC quorum agrees on;
    raises ``PayoutRefused`` when the network knows no such transaction (or it reverted),
    ``PayoutConflict`` while it is unmined, ``QuorumShort`` when too few nodes read a transfer
    the reader found the same, ``ChainUnavailable`` when no node answers."""
    read: Callable[[Any], list[Payout]] = (
        (lambda rpc: _evm(reader.network, rpc, tx_hash))
        if reader.network.kind == "evm"
        else (lambda rpc: _bitcoin(reader.network, rpc, tx_hash))
    )
    try:
        found = read(reader.rpc)
    except RpcUnavailable as exc:
        raise ChainUnavailable(f"the {reader.network.name} node is unavailable: {exc}") from None
    need = reader.network.rpc_quorum
    if need <= 1 or not isinstance(reader.rpc, NodePool) or not found:
        return found
    pool = reader.rpc
    theirs: list[list[Payout]] = []
    for node in pool.peers():
        try:
            theirs.append(pool.ask(node, read))
        except (RpcError, DomainError):  # it failed, knows no such transaction, or not mined there
            continue
    agreed = []
    for payout in found:
        confirmations = sorted(
            [payout.confirmations, *(q.confirmations for other in theirs for q in other if q.what == payout.what)],
            reverse=True,
        )
        if len(confirmations) >= need:
            agreed.append(replace(payout, confirmations=confirmations[need - 1]))
        elif refund is None or payout.to.lower() == (refund.address or "").lower():
            raise QuorumShort(
                f"transaction {tx_hash}: {len(confirmations)} of the {need} {reader.network.name} nodes the RPC "
                "quorum needs read it the same; submit it again once they agree"
            )
    return agreed


def _missing(network: Network, tx_hash: str) -> Exception:
    return PayoutRefused(
        f"no transaction {tx_hash} on {network.name}",
        [{"field": "transaction_hash", "issue": "not_found"}],
    )


def _unmined(tx_hash: str) -> Exception:
    return PayoutConflict(f"transaction {tx_hash} is not yet confirmed: it is not mined yet")


def _evm(net: Network, rpc: Any, tx_hash: str) -> list[Payout]:
    tx = rpc.call("eth_getTransactionByHash", tx_hash)
    if not tx:
        raise _missing(net, tx_hash)
    receipt = rpc.call("eth_getTransactionReceipt", tx_hash)
    if not receipt or not receipt.get("blockNumber"):
        raise _unmined(tx_hash)
    status = receipt.get("status")
    if status is not None and int(status, 16) != 1:
        raise PayoutRefused(
            f"transaction {tx_hash} reverted: it moved nothing", [{"field": "transaction_hash", "issue": "reverted"}]
        )
    number = int(receipt["blockNumber"], 16)
    block_hash = receipt["blockHash"]
    tip = int(rpc.call("eth_blockNumber"), 16)
    confs = max(0, tip - number + 1)
    found: list[Payout] = []
    native = next((t.symbol for t in net.tokens if t.native), None)
    value = int(tx.get("value") or "0x0", 16)
    sender = (tx.get("from") or "").lower() or None
    if native and tx.get("to") and value > 0:
        found.append(
            Payout(net.name.upper(), tx_hash, -1, native, tx["to"].lower(), value, number, block_hash, confs, sender)
        )
    tokens = {t.contract.lower(): t.symbol for t in net.tokens if t.contract}
    ranks: dict[str, int] = {}
    for log in sorted(receipt.get("logs") or [], key=lambda g: int(g["logIndex"], 16)):
        t = transfer_of(log, tokens)  # as the watcher reads it: the same rank for the same transfer
        if t is None:
            continue
        rank = ranks[t.to] = ranks.get(t.to, -1) + 1
        payout = Payout(net.name.upper(), tx_hash, rank, t.token, t.to, t.amount, number, block_hash, confs, t.sender)
        found.append(payout)
    return found


def _bitcoin(net: Network, rpc: Any, txid: str) -> list[Payout]:
    try:
        tx = rpc.call("getrawtransaction", txid, True)
    except RpcUnavailable:
        raise
    except RpcError:
        raise _missing(net, txid) from None
    if not tx.get("blockhash") or int(tx.get("confirmations") or 0) <= 0:
        raise _unmined(txid)
    header = rpc.call("getblockheader", tx["blockhash"])
    symbol = net.tokens[0].symbol if net.tokens else "BTC"
    found = []
    for out in tx.get("vout", []):
        address = output_address(out)
        if address:
            sats = int(Decimal(str(out["value"])) * SATS)
            found.append(
                Payout(
                    net.name.upper(),
                    txid,
                    int(out["n"]),
                    symbol,
                    address.lower(),
                    sats,
                    int(header["height"]),
                    tx["blockhash"],
                    int(tx["confirmations"]),
                )
            )
    return found


def quorum_tip(network: Network | None, *, timeout: float = 5.0) -> int | None:
    """The network's tip as its RPC quorum sees it: the height ``<NETWORK>_RPC_QUORUM`` nodes
    (the reader and others) have reached, so one node lying about its tip moves nothing.
    None when the network has no node, or too few answer."""
    if network is None or not network.nodes:
        return None
    method = "eth_blockNumber" if network.kind == "evm" else "getblockcount"
    pool = NodePool(network, version="2.0" if network.kind == "evm" else "1.0", timeout=timeout)
    try:

        def tip(rpc: Any) -> int:
            answer = rpc.call(method)
            return int(answer, 16) if isinstance(answer, str) else int(answer)

        try:
            tips = [tip(pool)]
        except (RpcError, TypeError, ValueError):
            return None
        need = max(1, network.rpc_quorum)
        if need > 1:
            for node in pool.peers():
                try:
                    tips.append(pool.ask(node, tip))
                except (RpcError, TypeError, ValueError):
                    continue
        tips.sort(reverse=True)
        return tips[need - 1] if len(tips) >= need else None
    finally:
        pool.close()
