"""What the sweeper asks of one EVM network: what each deposit holds, the ``flushMany``
call that moves it, and what a mined sweep actually moved (the forwarders' ``Flushed``
events, one per token and deposit: the record of a sweep is what the chain says moved,
not what was planned) or left behind (``NotFlushed``)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, cast

import requests
from eth_typing import HexStr
from web3 import Web3
from web3.providers.base import JSONBaseProvider

from kassa_common.chains import forwarder
from kassa_common.chains.networks import Network, Token
from kassa_common.chains.nodes import NodePool
from kassa_common.chains.rpc import RpcUnavailable

CALLS_PER_BATCH = 100


class PoolProvider(JSONBaseProvider):
    """web3's transport over the network's ``NodePool``: the sweeper and the CLI fail over
    between ``<NETWORK>_RPC_URLS`` like the watcher, and use only nodes whose chain id is the
    network's (checked before a node serves, again after every failover). No node in
    service raises ``requests.ConnectionError`` (what web3's HTTP transport raises for a
    node that is down), its text naming nodes by their redacted URL only."""

    def __init__(self, pool: NodePool) -> None:
        super().__init__()
        self.pool = pool

    def _send(self, payload: bytes) -> Any:
        try:
            return self.pool.raw(json.loads(payload))
        except RpcUnavailable as exc:
            raise requests.ConnectionError(str(exc)) from None

    def make_request(self, method, params):
        return self._send(self.encode_rpc_request(method, params))

    def make_batch_request(self, batch_requests):
        reply = self._send(self.encode_batch_rpc_request(batch_requests))
        return sorted(reply, key=lambda r: r.get("id") or 0) if isinstance(reply, list) else reply

    def is_connected(self, show_traceback: bool = False) -> bool:
        try:
            self.pool.call("eth_chainId")
            return True
        except RpcUnavailable:
            if show_traceback:
                raise
            return False


def web3_for(network: Network, timeout: float = 15.0) -> Web3:
    return Web3(PoolProvider(NodePool(network, timeout=timeout)))


class DepositChain:
    def __init__(self, network: Network, w3: Web3) -> None:
        self.network, self.w3 = network, w3
        self.factory = w3.eth.contract(
            address=network.forwarder_factory,  # type: ignore[arg-type]  # may be None
            abi=forwarder.artifact("ForwarderFactory")["abi"],
        )
        self.tokens = {t.symbol: t.contract for t in network.tokens if t.contract}
        self.native = next((t.symbol for t in network.tokens if t.native), None)
        self._symbols: dict[str, str | None] = {c.lower(): s for s, c in self.tokens.items()}
        self._symbols[forwarder.NATIVE] = self.native

    def native_token(self) -> Token:
        """The network's native coin (every EVM network has one)."""
        token = self.network.token(self.native) if self.native is not None else None
        if token is None:
            raise ValueError(f"{self.network.name} has no native coin")
        return token

    def balances(self, addresses: Iterable[str]) -> dict[str, dict[str, int]]:
        """address (lower case) -> symbol -> balance, for the native coin and every token of
        the network, in batched JSON-RPC requests."""
        wanted = [
            (Web3.to_checksum_address(a), symbol)
            for a in addresses
            for symbol in [self.native, *self.tokens]
            if symbol is not None
        ]
        held: dict[str, dict[str, int]] = defaultdict(dict)
        for start in range(0, len(wanted), CALLS_PER_BATCH):
            chunk = wanted[start : start + CALLS_PER_BATCH]
            with self.w3.batch_requests() as batch:
                for address, symbol in chunk:
                    batch.add(
                        self.w3.eth.get_balance(address)
                        if symbol == self.native
                        else self.w3.eth.call({"to": self.tokens[symbol], "data": HexStr(_balance_of(address))})
                    )
                results = batch.execute()
            for (address, symbol), result in zip(chunk, results, strict=False):
                held[address.lower()][symbol] = (
                    result if isinstance(result, int) else int.from_bytes(cast(bytes, result), "big")
                )
        return dict(held)

    def flush_many(self, deposits: list[tuple[str, str, list[str]]], factory: str | None = None) -> dict[str, str]:
        """The call that flushes ``(settlement, salt, token symbols)`` deposits: to and data;
        through ``factory`` (an earlier version's, same ABI) or the network's."""
        args = [
            (Web3.to_checksum_address(settlement), bytes.fromhex(salt[2:]), [self.tokens[s] for s in symbols])
            for settlement, salt, symbols in deposits
        ]
        return {
            "to": Web3.to_checksum_address(factory or self.factory.address),
            "data": self.factory.encode_abi("flushMany", [args]),
        }

    def moved(self, receipt: dict[str, Any]) -> dict[str, dict[str, int]]:
        """deposit address (lower case) -> token symbol -> base units, from ``Flushed`` logs."""
        return self._amounts(receipt, forwarder.FLUSHED_TOPIC)

    def not_moved(self, receipt: dict[str, Any]) -> dict[str, dict[str, int]]:
        """What the forwarders say stayed in them (``NotFlushed``): refused by the token, or by
        the settlement address (the native coin), same shape as ``moved``."""
        return self._amounts(receipt, forwarder.NOT_FLUSHED_TOPIC)

    def _amounts(self, receipt: dict[str, Any], topic: str) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(dict)
        for log in receipt["logs"]:
            topics = ["0x" + bytes(t).hex() for t in log["topics"]]
            if len(topics) != 2 or topics[0] != topic:
                continue
            symbol = self._symbols.get("0x" + topics[1][-40:])
            if symbol is not None:
                amounts = out[log["address"].lower()]
                amounts[symbol] = amounts.get(symbol, 0) + int(bytes(log["data"]).hex() or "0", 16)
        return dict(out)

    def factory_deployed(self, factory: str | None = None) -> bool:
        return len(self.w3.eth.get_code(Web3.to_checksum_address(factory or self.factory.address))) > 0


def _balance_of(address: str) -> str:
    return "0x70a08231" + address[2:].lower().rjust(64, "0")
