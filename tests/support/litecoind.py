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
    url = litecoind.wallet_url()
    node = RegtestNode(url, BitcoinRPC(url))
    try:
        yield node
    finally:
        node.rpc.close()
