"""The EVM watcher behind a lying node: anvil behind a proxy that adds logs to every
``eth_getLogs`` answer, logs the query never asked for. A Transfer of a contract that is no
configured token, or a USDC Transfer whose data is more than one 32-byte word (an amount
no uint256 holds), is passed over: the watcher keeps scanning and credits only the real
transfer in the same block."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from kassa_common.chains.evm import TRANSFER_TOPIC
from kassa_common.models import ChainBlock
from tests.support.anvil import anvil, anvil_isolated, chain  # noqa: F401  (fixtures)
from tests.support.evm_nodes import word
from tests.support.rpc_proxy import proxy  # noqa: F401  (fixture)
from tests.support.watcher import at_tip, live_evm_fixture, pay_usdc, units_due

CONFIRMATIONS = 3
UNKNOWN_CONTRACT = "0x" + "ee" * 20


h = live_evm_fixture(CONFIRMATIONS, watching=True, proxy_path="")


def lie(chain, p: dict, block: int, **fields) -> dict:
    """A Transfer log to ``p``'s address in ``block`` (its hash filled in by the proxy)."""
    return {
        "address": chain.tokens["USDC"],
        "blockNumber": hex(block),
        "blockHash": None,
        "transactionHash": "0x" + "e1" * 32,
        "transactionIndex": "0x0",
        "logIndex": "0x40",
        "removed": False,
        "topics": [TRANSFER_TOPIC, "0x" + "0" * 64, "0x" + p["address"][2:].lower().rjust(64, "0")],
        "data": word(units_due(p)),
        **fields,
    }


@pytest.mark.parametrize(
    "forged",
    [
        {"address": UNKNOWN_CONTRACT},  # a contract nobody configured: its symbol is unknown
        {"data": "0x" + "ff" * 64},  # 64 bytes of data: past uint256 and Numeric(78,0)
    ],
    ids=["unconfigured-contract", "64-byte-data"],
)
def test_logs_a_lying_node_adds_are_passed_over_and_the_real_transfer_credited(h, chain, proxy, sessions, forged):
    p = h.create(amount=3)
    at_tip(h.watcher, chain, CONFIRMATIONS)
    block = chain.block_number + 1  # the block the payment's real transfer goes into
    proxy.extra_logs = [lie(chain, p, block, **forged)]
    real = pay_usdc(chain, p)
    assert chain.block_number == block
    chain.mine(CONFIRMATIONS)

    h.wait_status(p["id"], "COMPLETED", timeout=30)
    assert proxy.counts["injected"] >= 1
    assert int(h.payment(p["id"]).amount_received_units) == units_due(p)
    assert [(t.status, int(t.amount_units)) for t in h.transfers(p["id"])] == [("CONFIRMED", units_due(p))]
    with sessions() as s:  # what the watcher read in that block (and reported): the real transfer alone
        read = s.scalar(
            sa.select(ChainBlock.transfers).where(ChainBlock.network == "LOCAL_EVM", ChainBlock.number == block)
        )
    assert [t["tx"].lower().removeprefix("0x") for t in read] == [real.lower().removeprefix("0x")]
    at_tip(h.watcher, chain, CONFIRMATIONS)  # and it keeps scanning
    chain.mine(2)
    at_tip(h.watcher, chain, CONFIRMATIONS)
