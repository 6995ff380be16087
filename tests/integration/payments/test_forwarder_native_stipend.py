"""The forwarder sends the native coin to its settlement address with a bounded amount of
gas (``Forwarder.NATIVE_GAS``): on anvil, a real Safe v1.4.1 and the shapes of ERC-4337
accounts take it; a settlement contract that burns gas or refuses the coin leaves it in the
deposit (``NotFlushed``) at a bounded cost, and the rest of the batch moves; a flush given
too little gas reverts as a whole, so gas estimation never settles on a limit at which the
settlement address would be starved."""

from __future__ import annotations

import pytest
from eth_utils import keccak
from web3.exceptions import ContractCustomError
from web3.logs import DISCARD

from kassa_common.chains import forwarder
from kassa_dev import chain as devchain
from tests.support import settlements
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.forwarder import ensure_factory, forwarder_at, fresh_address, fresh_salt

ETH = 10**16
USDC = 10**6


@pytest.fixture(scope="module")
def factory(anvil):
    return ensure_factory(anvil.w3)


@pytest.fixture
def chain(anvil_isolated, factory):
    return anvil_isolated


def native_gas(chain, factory) -> int:
    return forwarder_at(chain.w3, factory.functions.implementation().call()).functions.NATIVE_GAS().call()


def deposit_for(chain, factory, settlement: str, *, eth=ETH, usdc=0) -> tuple[bytes, str]:
    salt = fresh_salt()
    deposit = forwarder.deposit_address(factory.address, settlement, salt)
    if eth:
        devchain.pay(chain.w3, to=deposit, amount_base_units=eth, token_contract=None)
    if usdc:
        devchain.pay(chain.w3, to=deposit, amount_base_units=usdc, token_contract=chain.tokens["USDC"])
    return salt, deposit


def flush(chain, factory, settlement: str, salt: bytes, tokens=(), gas: int | None = None) -> dict:
    fields = {"from": chain.accounts[3]} | ({"gas": gas} if gas else {})
    receipt = chain.w3.eth.wait_for_transaction_receipt(
        factory.functions.flush(settlement, salt, list(tokens)).transact(fields)
    )
    assert receipt["status"] == 1
    return receipt


def events(chain, deposit: str, receipt, name: str) -> list[tuple[str, int]]:
    found = getattr(forwarder_at(chain.w3, deposit).events, name)().process_receipt(receipt, errors=DISCARD)
    return [(e["args"]["token"], e["args"]["amount"]) for e in found if e["address"] == deposit]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(settlements.safe, id="safe-1.4.1"),
        pytest.param(lambda w3: settlements.safe(w3, l2=True), id="safe-l2-1.4.1"),
        pytest.param(settlements.safe_like, id="safe-shaped-proxy"),
        pytest.param(settlements.smart_account, id="erc4337-account"),
        pytest.param(lambda w3: settlements.smart_account(w3, transparent=True), id="erc4337-transparent-emitting"),
    ],
)
def test_a_safe_or_a_smart_account_receives_the_coin_through_the_stipend(chain, factory, make):
    settlement = make(chain.w3)
    salt, deposit = deposit_for(chain, factory, settlement)

    receipt = flush(chain, factory, settlement, salt)

    assert chain.w3.eth.get_balance(settlement) == ETH and chain.w3.eth.get_balance(deposit) == 0
    assert events(chain, deposit, receipt, "Flushed") == [(forwarder.NATIVE, ETH)]


def flush_pair(chain, factory, settlement: str) -> tuple[dict, str, str]:
    """One flushMany: a deposit of ``settlement`` holding USDC and ETH, then a deposit of a
    plain account holding ETH; (receipt, the first deposit, the plain account)."""
    salt, deposit = deposit_for(chain, factory, settlement, usdc=3 * USDC)
    friendly, friendly_salt = fresh_address(), fresh_salt()
    devchain.pay(
        chain.w3,
        to=forwarder.deposit_address(factory.address, friendly, friendly_salt),
        amount_base_units=ETH,
        token_contract=None,
    )
    receipt = chain.w3.eth.wait_for_transaction_receipt(
        factory.functions.flushMany(
            [(settlement, salt, [chain.tokens["USDC"]]), (friendly, friendly_salt, [])]
        ).transact({"from": chain.accounts[3]})
    )
    assert receipt["status"] == 1  # the batch went through
    return receipt, deposit, friendly


@pytest.mark.parametrize("hostile", ["GasBurner", "Refuser"])
def test_a_settlement_contract_that_burns_gas_or_refuses_keeps_nothing_and_costs_at_most_the_stipend(
    chain, factory, hostile
):
    settlement = settlements.deploy(chain.w3, hostile)
    plain = fresh_address()
    devchain.pay(chain.w3, to=plain, amount_base_units=1, token_contract=None)  # an account that exists, as it does
    baseline, _, _ = flush_pair(chain, factory, plain)

    receipt, deposit, friendly = flush_pair(chain, factory, settlement)

    assert chain.w3.eth.get_balance(deposit) == ETH and chain.w3.eth.get_balance(settlement) == 0
    assert devchain.token_balance(chain.w3, chain.tokens["USDC"], settlement) == 3 * USDC  # the token moved
    assert events(chain, deposit, receipt, "NotFlushed") == [(forwarder.NATIVE, ETH)]
    assert chain.w3.eth.get_balance(friendly) == ETH  # and the next deposit of the batch
    extra = receipt["gasUsed"] - baseline["gasUsed"]
    assert extra <= native_gas(chain, factory) + 2_300 + 3_000  # the stipend, what a value call adds, the events
    if hostile == "GasBurner":
        assert extra >= native_gas(chain, factory)  # it did burn all it was given, and no more


def test_a_flush_with_too_little_gas_for_the_stipend_reverts_instead_of_starving_the_settlement(chain, factory):
    settlement = settlements.deploy(chain.w3, "NeedsGas", 40_000)  # takes the coin only with 40,000 gas
    salt, deposit = deposit_for(chain, factory, settlement)
    call = factory.functions.flush(settlement, salt, [])

    estimate = call.estimate_gas({"from": chain.accounts[3]})
    receipt = flush(chain, factory, settlement, salt, gas=estimate)  # exactly what estimation said

    assert chain.w3.eth.get_balance(settlement) == ETH and chain.w3.eth.get_balance(deposit) == 0
    assert events(chain, deposit, receipt, "Flushed") == [(forwarder.NATIVE, ETH)]


def test_below_the_reserve_the_flush_reverts_with_low_gas_and_the_coin_stays(chain, factory):
    settlement = settlements.safe_like(chain.w3)
    salt, deposit = deposit_for(chain, factory, settlement)
    flush(chain, factory, settlement, salt)  # deploys the clone
    devchain.pay(chain.w3, to=deposit, amount_base_units=ETH, token_contract=None)

    with pytest.raises(ContractCustomError) as raised:  # enough for the work, not for the whole stipend
        factory.functions.flush(settlement, salt, []).call({"from": chain.accounts[3], "gas": 80_000})

    assert raised.value.data == "0x" + keccak(text="LowGas()")[:4].hex()
    assert chain.w3.eth.get_balance(deposit) == ETH
