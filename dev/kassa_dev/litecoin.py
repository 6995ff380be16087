"""A local Litecoin regtest node: Debian's ``litecoind`` (``apt-get install litecoind``,
which ``scripts/ensure-tools`` does), for LOCAL_LITECOIN in ``make run`` and in the tests.

``start_litecoind`` runs it on ports and a data directory of its own and returns once its
RPC answers; ``prepare`` gives it a funded legacy wallet and a chain like Litecoin's
mainnet, where MWEB (the extension block, active on mainnet since 2022) is active:

- ``-txindex=1`` (``getrawtransaction`` finds mined transactions), ``-fallbackfee`` (no fee
  estimates on regtest), ``-walletrbf=1`` and ``-mempoolreplacement=1``: litecoind's
  wallet, like Bitcoin Core 0.21's, does not signal BIP125 replaceability by default, and
  unlike any Bitcoin Core its mempool refuses every replacement by default
  (``txn-mempool-conflict``, even for a transaction that signals); the tests replace
  transactions, as a Litecoin miner running with replacement on would. ``-persistmempool=0``:
  a restart (``Litecoind.restart``) empties the mempool, the tests' way to have a
  transaction evicted.
- MWEB activates at height 432 on regtest, and the block at that height is valid only
  with a peg-in in it (litecoind refuses to mine it otherwise: ``bad-txns-vin-empty``), so
  ``prepare`` mines 431 blocks, pegs one LTC into an MWEB address of a second wallet (the
  paying wallet keeps no MWEB coins, so its payments are ordinary transactions) and mines
  the activation block. Every later block carries MWEB's integrating transaction (HogEx).

Stop it with ``Litecoind.stop`` (by its pid: SIGTERM, which litecoind takes as a clean
shutdown, then SIGKILL).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from kassa_common.chains.rpc import JsonRpc, RpcError, RpcUnavailable

DEFAULT_RPC_PORT = 19443  # litecoind's own regtest default
RPC_USER = RPC_PASSWORD = "kassa"
WALLET = "kassa-dev"  # the paying wallet (legacy, funded)
MWEB_WALLET = "kassa-mweb"  # holds the peg-in that activates MWEB
MWEB_HEIGHT = 432  # where MWEB activates on regtest (BIP9, three 144-block periods)


class LitecoindError(RuntimeError):
    pass


def binary() -> str:
    found = shutil.which("litecoind")
    if found is None:
        raise LitecoindError(
            "litecoind is not installed: `sudo apt-get install litecoind` (or `scripts/ensure-tools test litecoind`)"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Litecoind:
    proc: subprocess.Popen[bytes]
    datadir: Path
    rpc_port: int
    owns_datadir: bool

    @property
    def url(self) -> str:
        """The node's RPC URL (credentials in it)."""
        return f"http://{RPC_USER}:{RPC_PASSWORD}@127.0.0.1:{self.rpc_port}"

    def wallet_url(self, wallet: str = WALLET) -> str:
        return f"{self.url}/wallet/{wallet}"

    def rpc(self, wallet: str | None = WALLET, timeout: float = 60.0) -> JsonRpc:
        return JsonRpc(self.wallet_url(wallet) if wallet else self.url, version="1.0", timeout=timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the node (its pid: SIGTERM, SIGKILL if it lingers); drop a data directory it made."""
        self._halt(timeout)
        if self.owns_datadir:
            shutil.rmtree(self.datadir, ignore_errors=True)

    def restart(self, timeout: float = 60.0) -> None:
        """Stop the node and start it again on its ports and data directory: its chain is
        kept, its mempool is not (``-persistmempool=0``), and no wallet is loaded
        (``loadwallet`` loads one; litecoind puts the wallet's own unconfirmed transactions
        back then). A clean stop: killed, litecoind loses the blocks it had not flushed yet
        (its tip goes back), which no node of a real network does."""
        self._halt(timeout)
        self.proc = _spawn(self.datadir, self.rpc_port, timeout)

    def _halt(self, timeout: float) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def start_litecoind(
    rpc_port: int | None = None, *, datadir: str | Path | None = None, timeout: float = 60.0
) -> Litecoind:
    """Start ``litecoind -regtest`` on ``rpc_port`` (a free one by default) and a free P2P
    port, in ``datadir`` (a new temporary one, removed by ``stop``, by default); return once
    its RPC answers."""
    owns = datadir is None
    path = Path(datadir or tempfile.mkdtemp(prefix="kassa-litecoind-"))
    path.mkdir(parents=True, exist_ok=True)
    port = rpc_port or free_port()
    try:
        proc = _spawn(path, port, timeout)
    except BaseException:
        if owns:
            shutil.rmtree(path, ignore_errors=True)
        raise
    return Litecoind(proc, path, port, owns)


def _spawn(path: Path, port: int, timeout: float) -> subprocess.Popen[bytes]:
    """litecoind on ``path`` and ``port``, once its RPC answers (stopped if it never does)."""
    args = [
        binary(),
        "-regtest",
        f"-datadir={path}",
        f"-rpcport={port}",
        f"-port={free_port()}",
        "-rpcbind=127.0.0.1",
        "-rpcallowip=127.0.0.1",
        f"-rpcuser={RPC_USER}",
        f"-rpcpassword={RPC_PASSWORD}",
        "-server=1",
        "-listen=0",
        "-dnsseed=0",
        "-upnp=0",
        "-txindex=1",
        "-fallbackfee=0.0002",
        "-walletrbf=1",
        "-mempoolreplacement=1",
        "-persistmempool=0",
        "-rpcservertimeout=2",  # a stop waits for open RPC connections to go idle (30 s by default)
        "-printtoconsole=0",
    ]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    rpc = JsonRpc(f"http://{RPC_USER}:{RPC_PASSWORD}@127.0.0.1:{port}", version="1.0", timeout=5.0)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise LitecoindError(f"litecoind exited with {proc.returncode}: {err.strip()[:500]}")
            try:
                rpc.call("getblockcount")
                return proc
            except (RpcUnavailable, RpcError):  # not listening yet, or warming up (-28)
                if time.monotonic() > deadline:
                    raise LitecoindError(f"litecoind did not answer on port {port} within {timeout:.0f} s") from None
                time.sleep(0.1)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        raise
    finally:
        rpc.close()


def answers(url: str) -> bool:
    """True if a node answers JSON-RPC at ``url``."""
    rpc = JsonRpc(url, version="1.0", timeout=2.0)
    try:
        rpc.call("getblockcount")
        return True
    except (RpcUnavailable, RpcError):
        return False
    finally:
        rpc.close()


def _wallet(node: Litecoind, name: str) -> None:
    rpc = node.rpc(None)
    try:
        if name in rpc.call("listwallets"):
            return
        try:
            rpc.call("loadwallet", name)
        except RpcError:
            rpc.call("createwallet", name)  # a legacy (BDB) wallet: litecoind 0.21's default
    finally:
        rpc.close()


def prepare(node: Litecoind) -> None:
    """A funded paying wallet (``WALLET``) on a chain with MWEB active; nothing to do on a
    node prepared before (a kept data directory)."""
    for name in (WALLET, MWEB_WALLET):
        _wallet(node, name)
    rpc, mweb = node.rpc(), node.rpc(MWEB_WALLET)
    try:
        height = int(rpc.call("getblockcount"))
        if height >= MWEB_HEIGHT:
            return
        rpc.call("generatetoaddress", MWEB_HEIGHT - 1 - height, rpc.call("getnewaddress"))
        rpc.call("sendtoaddress", mweb.call("getnewaddress", "", "mweb"), Decimal(1))
        rpc.call("generatetoaddress", 1, rpc.call("getnewaddress"))
        if int(rpc.call("getblockcount")) != MWEB_HEIGHT:
            raise LitecoindError("litecoind did not mine the MWEB activation block")
    finally:
        rpc.close()
        mweb.close()


def pay(url: str, address: str, units: int, *, chain: str = "regtest", wallet: str = WALLET) -> str:
    """Send ``units`` (litoshis) to ``address`` from the funded wallet of the node at ``url``
    (which must be on ``chain``); the transaction's id."""
    from kassa_common.pricing.amounts import units_text

    node = JsonRpc(url, version="1.0", timeout=60.0)
    try:
        try:
            on = node.call("getblockchaininfo")["chain"]
        except RpcUnavailable:
            raise LitecoindError("no litecoind answers there (start it with `make run`)") from None
        if on != chain:
            raise LitecoindError(f"the node is on the {on} chain, not {chain}")
    finally:
        node.close()
    rpc = JsonRpc(f"{url.rstrip('/')}/wallet/{wallet}", version="1.0", timeout=60.0)
    try:
        return str(rpc.call("sendtoaddress", address, units_text(units, 8)))
    finally:
        rpc.close()
