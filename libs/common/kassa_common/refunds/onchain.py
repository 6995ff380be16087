"""Reading one transaction from its network's node, for ``payouts.complete_with_hash``: the
transfers it makes, each as the chain watcher would report it (the same place inside the
transaction, so the same ``transfer_ref``), with its block and confirmations.

EVM: the receipt's ERC-20 ``Transfer`` logs of the network's tokens (ranked per recipient
like ``kassa_chain_watcher.evm``), and the transaction's own native value; a transaction that
reverted moved nothing. Native coin sent from inside a contract call is not read here (it
needs the node's traces): the watcher finds it. Bitcoin: the transaction's outputs
(``getrawtransaction`` verbose, which a node answers for mempool transactions and, with
``-txindex``, for mined ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import Network
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcError, RpcUnavailable
from kassa_common.errors import DomainError, InvalidTransition

if TYPE_CHECKING:
    from kassa_common.models import Refund

SATS = Decimal(100_000_000)


class PayoutRefused(DomainError):
    """The submitted transaction does not pay this refund (400)."""

    code = "VALIDATION_ERROR"


class PayoutConflict(InvalidTransition):
    """It may pay it, but not now or not this one: unconfirmed, or paying another refund (409)."""


@dataclass(frozen=True)
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

    @property
    def ref(self) -> str:
        return transfer_ref(self.tx_hash, self.place, self.to)


def transfer_ref(tx_hash: str, place: int, to: str) -> str:
    """What a transfer is, wherever a reorg puts it: ``<tx>:<place>``, and on EVM ``:<recipient>``
    too (one transaction may pay several addresses, each at place 0 of its own logs)."""
    ref = f"{tx_hash.lower()}:{place}"
    return f"{ref}:{to.lower()}" if to.lower().startswith("0x") else ref


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


def reader_for(network: Network | None) -> Reader | None:
    """A reader of ``network`` over its nodes (None: no node configured)."""
    if network is None or not network.nodes:
        return None
    return Reader(network, NodePool(network, version="2.0" if network.kind == "evm" else "1.0"))


def transfers_in(reader: Reader, tx_hash: str, refund: Refund) -> list[Payout]:
    """Every transfer of the transaction ``tx_hash``; raises ``payouts.PayoutRefused`` when the
    network knows no such transaction (or it reverted), ``PayoutConflict`` while it is unmined,
    ``ChainUnavailable`` when no node answers."""
    try:
        if reader.network.kind == "evm":
            return _evm(reader, tx_hash)
        return _bitcoin(reader, tx_hash)
    except RpcUnavailable as exc:
        raise ChainUnavailable(f"the {reader.network.name} node is unavailable: {exc}") from None


def _missing(reader: Reader, tx_hash: str) -> Exception:
    return PayoutRefused(
        f"no transaction {tx_hash} on {reader.network.name}",
        [{"field": "transaction_hash", "issue": "not_found"}],
    )


def _unmined(tx_hash: str) -> Exception:
    return PayoutConflict(f"transaction {tx_hash} is not yet confirmed: it is not mined yet")


def _evm(reader: Reader, tx_hash: str) -> list[Payout]:
    net = reader.network
    tx = reader.rpc.call("eth_getTransactionByHash", tx_hash)
    if not tx:
        raise _missing(reader, tx_hash)
    receipt = reader.rpc.call("eth_getTransactionReceipt", tx_hash)
    if not receipt or not receipt.get("blockNumber"):
        raise _unmined(tx_hash)
    status = receipt.get("status")
    if status is not None and int(status, 16) != 1:
        raise PayoutRefused(
            f"transaction {tx_hash} reverted: it moved nothing", [{"field": "transaction_hash", "issue": "reverted"}]
        )
    number = int(receipt["blockNumber"], 16)
    block_hash = receipt["blockHash"]
    tip = int(reader.rpc.call("eth_blockNumber"), 16)
    confs = max(0, tip - number + 1)
    found: list[Payout] = []
    native = next((t.symbol for t in net.tokens if t.native), None)
    value = int(tx.get("value") or "0x0", 16)
    if native and tx.get("to") and value > 0:
        found.append(Payout(net.name.upper(), tx_hash, -1, native, tx["to"].lower(), value, number, block_hash, confs))
    tokens = {t.contract.lower(): t.symbol for t in net.tokens if t.contract}
    ranks: dict[str, int] = {}
    for log in sorted(receipt.get("logs") or [], key=lambda g: int(g["logIndex"], 16)):
        topics = log.get("topics") or []
        if log.get("address", "").lower() not in tokens or len(topics) != 3 or topics[0] != TRANSFER_TOPIC:
            continue
        to = "0x" + topics[2][-40:].lower()
        rank = ranks[to] = ranks.get(to, -1) + 1
        data = log.get("data") or "0x"
        units = int(data, 16) if data not in ("0x", "") else 0
        found.append(
            Payout(
                net.name.upper(), tx_hash, rank, tokens[log["address"].lower()], to, units, number, block_hash, confs
            )
        )
    return found


def _bitcoin(reader: Reader, txid: str) -> list[Payout]:
    net = reader.network
    try:
        tx = reader.rpc.call("getrawtransaction", txid, True)
    except RpcUnavailable:
        raise
    except RpcError:
        raise _missing(reader, txid) from None
    if not tx.get("blockhash") or int(tx.get("confirmations") or 0) <= 0:
        raise _unmined(txid)
    header = reader.rpc.call("getblockheader", tx["blockhash"])
    symbol = net.tokens[0].symbol if net.tokens else "BTC"
    found = []
    for out in tx.get("vout", []):
        address = (out.get("scriptPubKey") or {}).get("address")
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
