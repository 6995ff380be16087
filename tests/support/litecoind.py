"""A real ``litecoind -regtest`` for the Bitcoin-family tests (DESIGN §15): the same
``RegtestNode`` the Bitcoin double and a real bitcoind give (``tests.support.bitcoin_rpc``),
on a node of its own (``kassa_dev.litecoin``: free ports, a temporary data directory,
a funded legacy wallet, MWEB active as on Litecoin's mainnet), stopped by its pid at the end.

One node per test session (per xdist worker): starting and preparing it takes seconds, and
tests share it safely as they share a real bitcoind (their heights relative, their
addresses their own payments'). Use the fixture from a test module::

    from tests.support.litecoind import litecoin_node  # noqa: F401  (fixture)
"""

from __future__ import annotations

import pytest

from kassa_dev import litecoin
from tests.support.bitcoin_rpc import BitcoinRPC, RegtestNode


class LitecoindNode(RegtestNode):
    """A ``RegtestNode`` on the session's litecoind, which can lose its mempool: ``evict``
    restarts it (``-persistmempool=0``) without its wallet, so the wallet does not put its
    own transactions back; ``broadcast`` loads the wallet again once it has broadcast."""

    def __init__(self, daemon: litecoin.Litecoind):
        url = daemon.wallet_url()
        super().__init__(url, BitcoinRPC(url))
        self.daemon = daemon

    @property
    def can_evict(self) -> bool:
        return True

    def evict(self, txid: str) -> None:
        assert txid in self.rpc.getrawmempool()
        self.daemon.restart()
        assert txid not in self.rpc.getrawmempool()

    def broadcast(self, raw_hex: str) -> str:
        txid = super().broadcast(raw_hex)
        self.load_wallet()
        return txid

    def load_wallet(self) -> None:
        node = BitcoinRPC(self.daemon.url)
        try:
            if litecoin.WALLET not in node.listwallets():
                node.loadwallet(litecoin.WALLET)
        finally:
            node.close()


@pytest.fixture(scope="session")
def litecoind():
    """The running node (``kassa_dev.litecoin.Litecoind``), prepared."""
    node = litecoin.start_litecoind()
    try:
        litecoin.prepare(node)
        yield node
    finally:
        node.stop()


@pytest.fixture
def litecoin_node(litecoind):
    """The session's node as a ``RegtestNode`` on its funded wallet."""
    node = LitecoindNode(litecoind)
    node.load_wallet()  # an earlier test may have left it unloaded (``evict``)
    try:
        yield node
    finally:
        node.rpc.close()
