"""Two anvils for the wrong-network tests: LOCAL_EVM (chain id 31337) and LOCAL_EVM_2 (chain
id 31338, the same dev tokens at the same addresses, and the forwarder factory).

The fixtures are imported by the test modules that use them::

    from tests.support.two_chains import chains, env  # noqa: F401  (fixtures)
"""

from __future__ import annotations

import pytest

from kassa_common.chains.networks import load_registry
from kassa_dev import chain as devchain
from tests.support.anvil import start_chain
from tests.support.forwarder import ensure_factory

SECOND = "LOCAL_EVM_2"
USDC = 10**6


@pytest.fixture(scope="module")
def chains():
    first = start_chain(block_time=0.5)
    try:
        second = start_chain(block_time=0.5, chain_id=devchain.CHAIN_ID_2)
    except BaseException:
        devchain.stop_anvil(first.proc)
        raise
    ensure_factory(second.w3)
    yield first, second
    devchain.stop_anvil(second.proc)
    devchain.stop_anvil(first.proc)


@pytest.fixture
def env(settings, chains):
    first, second = chains
    return settings.with_(
        networks=load_registry(
            {
                "LOCAL_EVM_RPC_URL": first.url,
                "LOCAL_EVM_CONFIRMATIONS": "2",
                "LOCAL_EVM_2_RPC_URL": second.url,
                "LOCAL_EVM_2_CONFIRMATIONS": "2",
            }
        )
    )


def subscribe(h, receiver) -> None:
    """A live webhook endpoint of the harness's merchant at ``receiver``."""
    r = h.client.post("/v1/api/webhooks", json={"url": receiver.url}, headers=h.merchant.headers("live"))
    assert r.status_code == 201, r.get_data(as_text=True)


def pay_usdc(chain, address: str, units: int) -> str:
    return devchain.pay(chain.w3, to=address, amount_base_units=units, token_contract=chain.tokens["USDC"])
