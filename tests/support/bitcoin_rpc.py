"""Tiny Bitcoin Core JSON-RPC client, plus the ``bitcoin_node()`` test backend.

``bitcoin_node()`` yields a :class:`RegtestNode`:

* if ``BITCOIN_RPC_URL`` is set (e.g. ``http://user:pass@127.0.0.1:18443``), that
  real ``bitcoind -regtest`` is used. It needs a wallet (one is loaded or
  created as ``kassa-tests`` if the URL names none), ``-fallbackfee=0.0002`` so
  sendtoaddress works without fee estimates, and ``-txindex=1`` so that
  getrawtransaction finds confirmed transactions. The chain is shared and
  persists, so tests must use heights relative to the start;
* otherwise a fresh :class:`~tests.support.bitcoin_double.BitcoinDouble` is
  started on a free port in a background thread, and stopped on exit.

In both cases 101 blocks are mined to the wallet first if its balance is below
10 BTC, so the wallet has mature coins to spend. Regtest halves the block
subsidy every 150 blocks, so give a real node a fresh datadir now and then.

Use the fixture from a test module or conftest::

    from tests.support.bitcoin_rpc import regtest_node  # noqa: F401  (fixture)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
from decimal import Decimal
from urllib.parse import quote

import requests

DEFAULT_WALLET = "kassa-tests"


class RPCError(Exception):
    """An error reply from the node; ``code`` is Bitcoin Core's RPC error code."""

    def __init__(self, code: int, message: str, method: str | None = None):
        super().__init__(f"{method or 'rpc'}: [{code}] {message}")
        self.code, self.message, self.method = code, message, method


def _dumps(obj) -> str:
    raw = json.dumps(obj, default=lambda o: "\x00D{}\x00".format(format(o, "f")))  # Decimal -> bare JSON number
    return re.sub(r'"\\u0000D(-?[0-9.]+)\\u0000"', r"\1", raw)


class BitcoinRPC:
    """``rpc.call("getblock", h, 2)`` or ``rpc.getblock(h, 2)``. Floats in replies are parsed as Decimal."""

    def __init__(self, url: str, timeout: float = 30.0):
        self.url, self.timeout = url, timeout
        self._session = requests.Session()  # credentials in the URL become HTTP basic auth
        self._ids = itertools.count(1)

    def call(self, method: str, *params):
        payload = {"jsonrpc": "1.0", "id": next(self._ids), "method": method, "params": list(params)}
        resp = self._session.post(
            self.url, data=_dumps(payload), timeout=self.timeout, headers={"Content-Type": "application/json"}
        )
        try:
            body = json.loads(resp.text, parse_float=Decimal)
        except ValueError:
            raise RPCError(-1, f"HTTP {resp.status_code}: {resp.text[:200]!r}", method) from None
        if body.get("error"):
            raise RPCError(body["error"]["code"], body["error"]["message"], method)
        return body["result"]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *params: self.call(name, *params)

    def close(self):
        self._session.close()


class RegtestNode:
    """A regtest node with a funded wallet: ``.url``, ``.rpc`` and control helpers that work on both backends."""

    def __init__(self, url: str, rpc: BitcoinRPC, double=None):
        self.url, self.rpc, self.double = url, rpc, double

    @property
    def is_double(self) -> bool:
        return self.double is not None

    @property
    def can_evict(self) -> bool:
        """Whether ``evict`` can take a transaction out of the mempool for good, so that the very
        same one can be broadcast again (a real bitcoind here cannot)."""
        return self.is_double

    def evict(self, txid: str) -> None:
        """The mempool loses ``txid`` (as one that expired or was evicted), unmined: the double's
        x_dropfrommempool."""
        self.rpc.x_dropfrommempool(txid)

    def new_address(self) -> str:
        return self.rpc.getnewaddress()

    def height(self) -> int:
        return self.rpc.getblockcount()

    def mine(self, nblocks: int = 1, address: str | None = None) -> list[str]:
        """Mine nblocks (the first one takes the mempool); returns their hashes."""
        return self.rpc.generatetoaddress(nblocks, address or self.new_address())

    def send(self, address: str, amount) -> str:
        """Wallet payment of ``amount`` BTC (Decimal or str preferred); returns the txid."""
        return self.rpc.sendtoaddress(address, Decimal(str(amount)))

    def block_of(self, txid: str) -> str | None:
        """Hash of the active-chain block holding txid, or None while unconfirmed (a real node's
        txindex still names a block a reorg took the transaction out of, with 0 confirmations)."""
        try:
            tx = self.rpc.getrawtransaction(txid, True)
            return tx.get("blockhash") if tx.get("confirmations", 0) > 0 else None
        except RPCError as exc:
            if exc.code != -5 or self.is_double:
                if exc.code == -5:
                    return None
                raise
            info = self.rpc.gettransaction(txid)  # real node without -txindex: ask the wallet
            return info.get("blockhash") if info.get("confirmations", 0) > 0 else None

    def drop_tx(self, txid: str):
        """Make mempool tx ``txid`` (sent by this wallet) go away for good.

        Double: x_dropfrommempool. Real bitcoind: replace it with a BIP125 double-spend of its inputs paying
        back to the wallet (returns the replacement txid); the conflict then gets mined instead.
        """
        if self.is_double:
            return self.rpc.x_dropfrommempool(txid)
        tx = self.rpc.getrawtransaction(txid, True)
        fee = self.rpc.getmempoolentry(txid)["fees"]["base"]
        total_in = sum(out["value"] for out in tx["vout"]) + fee
        raw = self.rpc.createrawtransaction(
            [{"txid": i["txid"], "vout": i["vout"]} for i in tx["vin"]],
            [{self.new_address(): total_in - 2 * fee - Decimal("0.0001")}],
        )
        signed = self.rpc.signrawtransactionwithwallet(raw)
        assert signed["complete"], signed
        return self.rpc.sendrawtransaction(signed["hex"])

    def raw(self, txid: str) -> str:
        """The signed bytes of a known transaction (hex), to broadcast it again later."""
        return self.rpc.getrawtransaction(txid, False)

    def broadcast(self, raw_hex: str) -> str:
        """Broadcast signed bytes (``sendrawtransaction``); returns the txid."""
        return self.rpc.sendrawtransaction(raw_hex)

    def bump_fee(self, txid: str) -> str:
        """Replace wallet tx ``txid`` in the mempool by a higher-fee version paying the same (BIP125
        ``bumpfee``, on both backends); returns the replacement's txid."""
        return self.rpc.bumpfee(txid)["txid"]

    def reorg_out(self, txid: str, extra_blocks: int = 1) -> list[str]:
        """The reorg recipe: invalidate the block holding txid, drop txid, then mine a longer competing chain.

        Returns the new blocks' hashes; afterwards txid is neither confirmed nor in the mempool (on real bitcoind
        the mined competing chain holds a conflicting double-spend instead).
        """
        blockhash = self.block_of(txid)
        assert blockhash, f"{txid} is not confirmed"
        depth = self.height() - self.rpc.getblockheader(blockhash)["height"] + 1
        self.rpc.invalidateblock(blockhash)
        self.drop_tx(txid)
        return self.mine(depth + extra_blocks)

    def fund(self, min_balance=Decimal(10)):
        """Mine 101 blocks to the wallet if it holds less than min_balance BTC."""
        if self.rpc.getbalance() < min_balance:
            self.mine(101)


def _attach_real(url: str) -> RegtestNode:
    rpc = BitcoinRPC(url)
    chain = rpc.getblockchaininfo()["chain"]
    if chain != "regtest":
        raise RuntimeError(f"BITCOIN_RPC_URL points at a {chain!r} node; tests only run against regtest")
    if "/wallet/" not in url:
        wallets = rpc.listwallets()
        if len(wallets) != 1:
            name = DEFAULT_WALLET
            if name not in wallets:
                try:
                    rpc.loadwallet(name)
                except RPCError:
                    rpc.createwallet(name)
        else:
            name = wallets[0]
        url = url.rstrip("/") + "/wallet/" + quote(name, safe="")
        rpc = BitcoinRPC(url)
    return RegtestNode(url, rpc)


@contextlib.contextmanager
def bitcoin_node(url: str | None = None):
    """Yield a funded :class:`RegtestNode`: the node at ``url``/``BITCOIN_RPC_URL``, else a fresh double."""
    url = url or os.environ.get("BITCOIN_RPC_URL")
    if url:
        node = _attach_real(url)
        try:
            node.fund()
            yield node
        finally:
            node.rpc.close()
        return
    from .bitcoin_double import BitcoinDouble

    with BitcoinDouble() as double:
        node = RegtestNode(double.url, BitcoinRPC(double.url), double=double)
        try:
            node.fund()
            yield node
        finally:
            node.rpc.close()


try:  # optional pytest fixture: `from tests.support.bitcoin_rpc import regtest_node` in a test module
    import pytest

    @pytest.fixture
    def regtest_node():
        with bitcoin_node() as node:
            yield node
except ImportError:  # pragma: no cover
    pass
