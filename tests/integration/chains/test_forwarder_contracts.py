"""The forwarder contracts on anvil, with the real dev tokens (USDC returns a bool, USDT
returns nothing, like USDT on Ethereum): a deposit's funds can only ever reach its
settlement address, whoever calls and whenever they arrived."""

from __future__ import annotations

import json

import pytest
from web3.exceptions import ContractLogicError
from web3.logs import DISCARD

from kassa_common.chains import forwarder
from kassa_dev import chain as devchain
from kassa_dev import contracts as build
from tests.support.anvil import anvil, anvil_isolated  # noqa: F401  (fixtures)
from tests.support.forwarder import forwarder_at, fresh_address, fresh_salt
from tests.support.sweeper import factory  # noqa: F401  (a fixture)

USDC_1, ETH_1 = 10**6, 10**18


@pytest.fixture
def chain(anvil_isolated, factory):
    return anvil_isolated


def balances(chain, address: str) -> dict[str, int]:
    return {
        "USDC": devchain.token_balance(chain.w3, chain.tokens["USDC"], address),
        "USDT": devchain.token_balance(chain.w3, chain.tokens["USDT"], address),
        "ETH": chain.w3.eth.get_balance(address),
    }


def fund(chain, address: str, usdc=0, usdt=0, eth=0) -> None:
    for symbol, amount in (("USDC", usdc), ("USDT", usdt)):
        if amount:
            devchain.pay(chain.w3, to=address, amount_base_units=amount, token_contract=chain.tokens[symbol])
    if eth:
        devchain.pay(chain.w3, to=address, amount_base_units=eth, token_contract=None)


def tokens(chain) -> list[str]:
    return [chain.tokens["USDC"], chain.tokens["USDT"]]


def send(chain, call, sender=None) -> dict:
    tx = call.transact({"from": sender or chain.accounts[3]})
    receipt = chain.w3.eth.wait_for_transaction_receipt(tx)
    assert receipt["status"] == 1
    return receipt


# -- where a deposit is ------------------------------------------------------------------


def test_the_committed_artifacts_are_what_the_sources_compile_to():
    assert build.stale() == []


def test_the_factory_is_where_networks_json_says_on_every_evm_chain(factory):
    assert factory.address == forwarder.factory_address()
    registry = json.loads(forwarder.ARTIFACTS.with_name("networks.json").read_text())["networks"]
    assert {n["name"]: n.get("forwarder_factory") for n in registry if n["kind"] == "evm"} == {
        n["name"]: factory.address for n in registry if n["kind"] == "evm"
    }
    assert factory.functions.implementation().call() == forwarder.implementation_address(factory.address)


def test_the_off_chain_deposit_address_is_the_factory_view(factory):
    for _ in range(5):
        settlement, salt = fresh_address(), fresh_salt()
        assert (
            forwarder.deposit_address(factory.address, settlement, salt)
            == factory.functions.depositAddress(settlement, salt).call()
        )


def test_deploying_the_factory_again_changes_nothing(chain, factory):
    from kassa_sweeper.deploy import deploy_factory
    from tests.support.forwarder import SWEEPER

    nonce = chain.w3.eth.get_transaction_count(SWEEPER.address)
    assert deploy_factory(chain.w3, SWEEPER) == (factory.address, None)
    assert chain.w3.eth.get_transaction_count(SWEEPER.address) == nonce


# -- flushing ------------------------------------------------------------------------------


def test_funds_sent_before_deployment_reach_only_the_settlement_address(chain, factory):
    settlement, salt = fresh_address(), fresh_salt()
    deposit = forwarder.deposit_address(factory.address, settlement, salt)
    fund(chain, deposit, usdc=25 * USDC_1, usdt=7 * USDC_1, eth=ETH_1 // 100)
    assert chain.w3.eth.get_code(deposit) == b""  # a plain address until the first flush

    receipt = send(chain, factory.functions.flush(settlement, salt, tokens(chain)))  # anyone may call

    assert balances(chain, settlement) == {"USDC": 25 * USDC_1, "USDT": 7 * USDC_1, "ETH": ETH_1 // 100}
    assert balances(chain, deposit) == {"USDC": 0, "USDT": 0, "ETH": 0}
    flushed = forwarder_at(chain.w3, deposit).events.Flushed().process_receipt(receipt, errors=DISCARD)
    assert {(e["args"]["token"], e["args"]["amount"]) for e in flushed} == {
        (chain.tokens["USDC"], 25 * USDC_1),
        (chain.tokens["USDT"], 7 * USDC_1),
        (forwarder.NATIVE, ETH_1 // 100),
    }
    assert forwarder_at(chain.w3, deposit).functions.settlement().call() == settlement


def test_funds_sent_after_deployment_are_received_and_flushed(chain, factory):
    settlement, salt = fresh_address(), fresh_salt()
    deposit = forwarder.deposit_address(factory.address, settlement, salt)
    send(chain, factory.functions.deploy(settlement, salt))
    assert chain.w3.eth.get_code(deposit) != b""
    fund(chain, deposit, usdt=3 * USDC_1, eth=ETH_1 // 1000)  # receive() takes the coin

    send(chain, factory.functions.flush(settlement, salt, tokens(chain)))

    assert balances(chain, settlement) == {"USDC": 0, "USDT": 3 * USDC_1, "ETH": ETH_1 // 1000}
    assert balances(chain, deposit) == {"USDC": 0, "USDT": 0, "ETH": 0}


def test_a_front_runner_with_another_settlement_reaches_another_address_and_moves_nothing(chain, factory):
    settlement, salt, attacker = fresh_address(), fresh_salt(), chain.accounts[4]
    deposit = forwarder.deposit_address(factory.address, settlement, salt)
    fund(chain, deposit, usdc=10 * USDC_1, eth=ETH_1 // 100)
    before = balances(chain, attacker)

    send(chain, factory.functions.flush(attacker, salt, tokens(chain)), sender=attacker)
    send(chain, factory.functions.deploy(attacker, salt), sender=attacker)

    other = forwarder.deposit_address(factory.address, attacker, salt)
    assert other != deposit and chain.w3.eth.get_code(deposit) == b""
    assert balances(chain, deposit) == {"USDC": 10 * USDC_1, "USDT": 0, "ETH": ETH_1 // 100}
    assert balances(chain, attacker)["USDC"] == before["USDC"]
    send(chain, factory.functions.flush(settlement, salt, tokens(chain)))  # the real deposit still flushes
    assert balances(chain, settlement)["USDC"] == 10 * USDC_1


def test_no_one_can_rebind_a_deposit_or_use_the_implementation(chain, factory):
    settlement, salt = fresh_address(), fresh_salt()
    deposit = forwarder_at(chain.w3, forwarder.deposit_address(factory.address, settlement, salt))
    send(chain, factory.functions.deploy(settlement, salt))
    implementation = forwarder_at(chain.w3, factory.functions.implementation().call())
    for contract in (deposit, implementation):
        with pytest.raises(ContractLogicError):
            contract.functions.initialize(chain.accounts[4]).transact({"from": chain.accounts[4]})
    with pytest.raises(ContractLogicError):
        implementation.functions.flush([]).transact({"from": chain.accounts[4]})
    assert deposit.functions.settlement().call() == settlement


def test_the_contracts_have_no_function_that_could_send_elsewhere():
    def functions(name):
        return {f["name"] for f in forwarder.artifact(name)["abi"] if f["type"] == "function"}

    assert functions("Forwarder") == {"factory", "settlement", "initialize", "flush", "NATIVE_GAS"}
    assert functions("ForwarderFactory") == {"implementation", "depositAddress", "deploy", "flush", "flushMany"}
    assert all(
        f["type"] != "fallback" for name in ("Forwarder", "ForwarderFactory") for f in forwarder.artifact(name)["abi"]
    )


def test_something_that_is_not_a_token_is_skipped_and_the_rest_moves(chain, factory):
    settlement, salt = fresh_address(), fresh_salt()
    deposit = forwarder.deposit_address(factory.address, settlement, salt)
    fund(chain, deposit, usdc=2 * USDC_1)
    send(chain, factory.functions.flush(settlement, salt, [fresh_address(), factory.address, chain.tokens["USDC"]]))
    assert balances(chain, settlement)["USDC"] == 2 * USDC_1


def test_flush_many_moves_every_listed_deposit_in_one_transaction(chain, factory):
    deposits = [(fresh_address(), fresh_salt()) for _ in range(3)]
    for i, (settlement, salt) in enumerate(deposits):
        fund(chain, forwarder.deposit_address(factory.address, settlement, salt), usdc=(i + 1) * USDC_1)
    send(chain, factory.functions.flushMany([(s, salt, [chain.tokens["USDC"]]) for s, salt in deposits]))
    assert [balances(chain, s)["USDC"] for s, _ in deposits] == [USDC_1, 2 * USDC_1, 3 * USDC_1]


# -- gas ----------------------------------------------------------------------------------


def gas_to_flush(chain, factory, n: int) -> int:
    """Gas of one flushMany over ``n`` never-deployed deposits holding USDC (one sender)."""
    deposits = [(fresh_address(), fresh_salt()) for _ in range(n)]
    for settlement, salt in deposits:
        fund(chain, forwarder.deposit_address(factory.address, settlement, salt), usdc=USDC_1)
        fund(chain, settlement, usdc=USDC_1)  # a settlement address that already holds USDC, as in real life
    return send(chain, factory.functions.flushMany([(s, salt, [chain.tokens["USDC"]]) for s, salt in deposits]))[
        "gasUsed"
    ]


def test_gas_per_flushed_deposit_single_and_batched(chain, factory, record_property):
    single, batch = gas_to_flush(chain, factory, 1), gas_to_flush(chain, factory, 20)
    per_deposit = batch // 20
    record_property("gas_single", single)
    record_property("gas_per_deposit_batched_20", per_deposit)
    print(f"\ngas to sweep one USDC deposit: alone {single}, in a batch of 20 {per_deposit} each")
    assert per_deposit < single  # the 21,000 base cost and the call overhead are shared
