"""A node that refuses an eth_getLogs range over its limit (as Infura does), on a network with
no native coin, for the tests of the adaptive log window."""

from __future__ import annotations

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.chains.networks import Network, Token
from kassa_common.chains.rpc import RangeTooLarge
from kassa_chain_watcher.evm import EvmChain

USDC = "0x" + "aa" * 20
ALICE = "0x" + "a1" * 20
NET = Network("TESTNET", "evm", 1, 3, 1.0, "http://node", (Token("USDC", USDC, 6, False),))


class LimitedNode:
    """eth_getLogs over blocks each holding one USDC transfer to ALICE; a range over ``limit``
    blocks is refused the way Infura does. Records every range asked for."""

    def __init__(self, limit: int) -> None:
        self.limit, self.asked = limit, []

    def call(self, method, query):
        lo, hi = int(query["fromBlock"], 16), int(query["toBlock"], 16)
        self.asked.append((lo, hi))
        if hi - lo + 1 > self.limit:
            raise RangeTooLarge("eth_getLogs: query returned more than 10000 results")
        return [
            {
                "blockNumber": hex(n),
                "blockHash": f"0x{n:064x}",
                "logIndex": "0x0",
                "removed": False,
                "transactionHash": f"0x{n:064x}",
                "address": USDC,
                "data": f"0x{n:064x}",
                "topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + ALICE[2:].rjust(64, "0")],
            }
            for n in range(lo, hi + 1)
        ]

    def close(self) -> None:
        pass


def chain_on(node, log_range=64) -> EvmChain:
    return EvmChain(NET, node, log_range=log_range)  # NET has no native coin: eth_getLogs only
