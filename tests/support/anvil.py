"""pytest fixtures for a real local EVM chain (anvil + the dev stablecoins).

Use from a test module or conftest::

    from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)

or, where the module's tests name the chain ``chain``, with ``chain`` too.

``anvil`` is session-scoped: one fresh anvil per test session (per xdist worker)
on a free port, in automine mode (every transaction gets its own block at once;
empty blocks only via ``mine()``), with USDC/USDT deployed and minted.
``anvil_isolated`` is the same chain, rolled back with evm_snapshot/evm_revert
after the test, so a test's transfers and blocks do not leak into the next.
``chain`` is ``anvil_isolated`` under the name the chain tests use (``tests.support.watcher``
and ``tests.support.rpc_proxy`` build on it).
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from web3 import Web3

from kassa_dev import chain as devchain


def free_port(host: str = devchain.DEFAULT_HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


@dataclass
class AnvilChain:
    url: str
    port: int
    w3: Web3
    proc: subprocess.Popen
    tokens: dict[str, str] = field(default_factory=dict)
    accounts: list[str] = field(default_factory=list)
    # Height once the tokens were deployed; reorgs must not reach below it.
    base_block: int = 0

    def rpc(self, method: str, *params: Any) -> Any:
        """Raw JSON-RPC call; returns ``result`` or raises DevChainError on ``error``."""
        response = self.w3.provider.make_request(method, list(params))  # type: ignore[arg-type]
        if "error" in response:
            raise devchain.DevChainError(f"{method}{params!r} failed: {response['error']}")
        return response.get("result")

    @property
    def block_number(self) -> int:
        return self.w3.eth.block_number

    def mine(self, n: int = 1) -> int:
        """Mine ``n`` blocks (empty unless transactions are pending); returns the new height."""
        if n < 1:
            raise ValueError("n must be >= 1")
        self.rpc("anvil_mine", hex(n))
        return self.block_number

    def snapshot(self) -> str:
        """evm_snapshot: an id to hand to :meth:`revert` (each id can be reverted to once)."""
        return self.rpc("evm_snapshot")

    def revert(self, snapshot_id: str) -> None:
        """evm_revert: state and height go back to the snapshot (the chain gets shorter)."""
        if not self.rpc("evm_revert", snapshot_id):
            raise devchain.DevChainError(f"evm_revert({snapshot_id}) refused")

    def reorg(self, depth: int, txs: Sequence[tuple[str | dict, int]] = ()) -> None:
        """anvil_reorg: replace the last ``depth`` blocks with ``depth`` new ones.

        The height stays the same, the replaced blocks get new hashes, and the
        transactions in them are dropped (not returned to the mempool). ``txs`` are
        ``(raw_signed_tx_hex or tx_request_dict, block_offset)`` pairs to include in
        the new blocks; offset 0 is the first new block (the old ``height-depth+1``).
        """
        if depth < 1:
            raise ValueError("depth must be >= 1")
        if self.block_number - depth < self.base_block:
            raise ValueError(
                f"a reorg of depth {depth} at height {self.block_number} would remove the dev "
                f"token deployment (done by block {self.base_block}); mine more blocks first"
            )
        self.rpc("anvil_reorg", depth, [[tx, offset] for tx, offset in txs])

    def raw_transaction(self, tx_hash: str) -> str:
        """The signed bytes of a known transaction (for re-including it with :meth:`reorg`)."""
        return self.rpc("eth_getRawTransactionByHash", tx_hash)


def start_chain(
    *, block_time: float | None = None, attempts: int = 3, chain_id: int = devchain.CHAIN_ID, genesis: int | None = None
) -> AnvilChain:
    """Start anvil on a free port, deploy the dev tokens, return the handle (``chain_id``
    ``devchain.CHAIN_ID_2`` for a LOCAL_EVM_2 chain; ``genesis``: the genesis block's number,
    for a chain far higher than the other, like a real network beside a young one)."""
    last_error: Exception | None = None
    for _ in range(attempts):  # a free port can be taken between probe and bind
        port = free_port()
        try:
            proc = devchain.start_anvil(
                port, block_time=block_time, chain_id=chain_id, extra_args=("--number", str(genesis)) if genesis else ()
            )
        except devchain.DevChainError as exc:
            last_error = exc
            continue
        try:
            w3 = Web3(Web3.HTTPProvider(proc.rpc_url, request_kwargs={"timeout": 30}))
            tokens = devchain.deploy_dev_tokens(w3)
            return AnvilChain(
                url=proc.rpc_url,
                port=port,
                w3=w3,
                proc=proc,
                tokens=tokens,
                accounts=[Web3.to_checksum_address(a) for a in w3.eth.accounts],
                base_block=w3.eth.block_number,
            )
        except BaseException:
            devchain.stop_anvil(proc)
            raise
    raise devchain.DevChainError(f"could not start anvil after {attempts} attempts: {last_error}")


@pytest.fixture(scope="session")
def anvil() -> Iterator[AnvilChain]:
    chain = start_chain()
    try:
        yield chain
    finally:
        devchain.stop_anvil(chain.proc)


@pytest.fixture
def anvil_isolated(anvil: AnvilChain) -> Iterator[AnvilChain]:
    snapshot_id = anvil.snapshot()
    try:
        yield anvil
    finally:
        anvil.revert(snapshot_id)


@pytest.fixture
def chain(anvil_isolated: AnvilChain) -> AnvilChain:
    return anvil_isolated
