"""The local EVM dev chain: real anvil, real solcjs-compiled TestToken."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[3]
try:  # normally provided by installed kassa-common and kassa-devtools (dev/) and the root conftest
    import kassa_dev.chain  # noqa: F401
    import tests.support.anvil  # noqa: F401
except ImportError:
    for _p in (_REPO, _REPO / "libs" / "common", _REPO / "dev"):
        if str(_p) not in sys.path:
            sys.path.append(str(_p))

from eth_utils import keccak  # noqa: E402
from web3 import Web3  # noqa: E402
from web3.exceptions import ContractLogicError, TransactionNotFound  # noqa: E402

from kassa_dev import chain as devchain  # noqa: E402
from tests.support.anvil import AnvilChain, anvil, anvil_isolated, free_port  # noqa: E402,F401

ONE_TOKEN = 10**6  # both dev stablecoins have 6 decimals
MINTED = 1_000_000 * ONE_TOKEN


def fresh_address(tag: str) -> str:
    return Web3.to_checksum_address(keccak(text=f"kassa test recipient {tag}")[12:])


def transfer_logs_to(chain: AnvilChain, token: str, recipient: str, from_block: int) -> list:
    recipient_topic = "0x" + "00" * 12 + recipient[2:].lower()
    return chain.w3.eth.get_logs(
        {
            "address": token,
            "fromBlock": from_block,
            "toBlock": "latest",
            "topics": [devchain.TRANSFER_TOPIC, None, recipient_topic],
        }
    )


# --- fixed facts --------------------------------------------------------------


def test_deployer_and_token_addresses_match_networks_registry():
    assert devchain.DEPLOYER_PRIVATE_KEY == "0x" + keccak(b"kassa dev token deployer").hex()
    assert devchain.DEPLOYER_ADDRESS == "0x4b8cCAE2cd9d9241fF42353dDAC46191b2E26D1f"
    networks = json.loads((_REPO / "libs/common/kassa_common/chains/networks.json").read_text())
    local = next(n for n in networks["networks"] if n["name"] == "LOCAL_EVM")
    assert local["chain_id"] == devchain.CHAIN_ID
    registry = {t["symbol"]: t for t in local["tokens"] if not t["native"]}
    assert {s: t["contract"] for s, t in registry.items()} == devchain.dev_token_addresses()
    for token in devchain.DEV_TOKENS:
        assert registry[token.symbol]["decimals"] == token.decimals


def test_compile_from_source_then_cached(tmp_path):
    started = time.monotonic()
    abi, bytecode = devchain.compile_token(cache_dir=tmp_path)
    cold = time.monotonic() - started
    (artifact,) = tmp_path.glob("TestToken-*.json")
    assert json.loads(artifact.read_text())["compilerVersion"].startswith(devchain.solc_version())
    names = {entry.get("name") for entry in abi}
    assert {"transfer", "transferFrom", "approve", "allowance", "balanceOf", "mint", "Transfer"} <= names
    assert bytecode.startswith("0x") and len(bytecode) > 1000

    started = time.monotonic()
    assert devchain.compile_token(cache_dir=tmp_path) == (abi, bytecode)
    assert time.monotonic() - started < min(cold, 0.5)


# --- deployment -----------------------------------------------------------------


def test_deploy_is_idempotent(anvil):
    height = anvil.block_number
    nonce = anvil.w3.eth.get_transaction_count(devchain.DEPLOYER_ADDRESS)
    assert nonce == len(devchain.DEV_TOKENS) * (1 + len(anvil.accounts))
    assert devchain.deploy_dev_tokens(anvil.w3) == anvil.tokens == devchain.dev_token_addresses()
    assert anvil.block_number == height
    assert anvil.w3.eth.get_transaction_count(devchain.DEPLOYER_ADDRESS) == nonce


def test_ten_default_accounts_hold_a_million_of_each(anvil):
    assert len(anvil.accounts) == 10
    for token in devchain.DEV_TOKENS:
        contract = devchain.erc20(anvil.w3, anvil.tokens[token.symbol])
        assert contract.functions.symbol().call() == token.symbol
        assert contract.functions.name().call() == token.name
        assert contract.functions.decimals().call() == 6
        assert contract.functions.totalSupply().call() == 10 * MINTED
        for account in anvil.accounts:
            assert contract.functions.balanceOf(account).call() == MINTED


def test_deploy_refuses_when_deployer_nonce_was_spent():
    proc = devchain.start_anvil(free_port())
    try:
        w3 = Web3(Web3.HTTPProvider(proc.rpc_url))
        w3.provider.make_request("anvil_setBalance", [devchain.DEPLOYER_ADDRESS, hex(10**18)])
        w3.provider.make_request("anvil_impersonateAccount", [devchain.DEPLOYER_ADDRESS])
        w3.eth.send_transaction({"from": devchain.DEPLOYER_ADDRESS, "to": devchain.DEPLOYER_ADDRESS})
        with pytest.raises(devchain.DevChainError, match="nonce 1, not 0"):
            devchain.deploy_dev_tokens(w3)
    finally:
        devchain.stop_anvil(proc)


# --- paying ---------------------------------------------------------------------


def test_pay_usdc_emits_exact_transfer_log(anvil_isolated):
    chain = anvil_isolated
    usdc = chain.tokens["USDC"]
    recipient = fresh_address("usdc")
    amount = 12_345_678  # 12.345678 USDC
    before = chain.block_number

    tx_hash = devchain.pay(chain.w3, to=recipient, amount_base_units=amount, token_contract=usdc)

    assert tx_hash.startswith("0x") and len(tx_hash) == 66
    receipt = chain.w3.eth.get_transaction_receipt(tx_hash)
    assert receipt["status"] == 1 and receipt["blockNumber"] == before + 1
    (log,) = receipt["logs"]
    assert log["address"] == usdc
    assert "0x" + log["topics"][0].hex().removeprefix("0x") == devchain.TRANSFER_TOPIC
    (event,) = devchain.erc20(chain.w3, usdc).events.Transfer().process_receipt(receipt)
    assert event["args"]["from"] == chain.accounts[0]
    assert event["args"]["to"] == recipient
    assert event["args"]["value"] == amount
    assert [l["transactionHash"] for l in transfer_logs_to(chain, usdc, recipient, before)] == [
        receipt["transactionHash"]
    ]
    assert devchain.token_balance(chain.w3, usdc, recipient) == amount
    assert devchain.token_balance(chain.w3, usdc, chain.accounts[0]) == MINTED - amount


def test_pay_usdt_from_another_account(anvil_isolated):
    chain = anvil_isolated
    usdt = chain.tokens["USDT"]
    recipient = fresh_address("usdt")
    devchain.pay(chain.w3, to=recipient, amount_base_units=ONE_TOKEN, token_contract=usdt, sender=chain.accounts[3])
    assert devchain.token_balance(chain.w3, usdt, recipient) == ONE_TOKEN
    assert devchain.token_balance(chain.w3, usdt, chain.accounts[3]) == MINTED - ONE_TOKEN


def test_pay_native_moves_eth(anvil_isolated):
    chain = anvil_isolated
    recipient = fresh_address("eth")
    amount = 3 * 10**17
    sender_before = chain.w3.eth.get_balance(chain.accounts[0])

    tx_hash = devchain.pay(chain.w3, to=recipient, amount_base_units=amount, token_contract=None)

    receipt = chain.w3.eth.get_transaction_receipt(tx_hash)
    fee = receipt["gasUsed"] * receipt["effectiveGasPrice"]
    assert chain.w3.eth.get_balance(recipient) == amount
    assert chain.w3.eth.get_balance(chain.accounts[0]) == sender_before - amount - fee


def test_pay_from_an_address_anvil_holds_no_key_for(anvil_isolated):
    chain = anvil_isolated
    holder = fresh_address("holder")
    usdc = chain.tokens["USDC"]
    devchain.pay(chain.w3, to=holder, amount_base_units=10**18, token_contract=None)
    devchain.pay(chain.w3, to=holder, amount_base_units=5 * ONE_TOKEN, token_contract=usdc)
    devchain.pay(chain.w3, to=chain.accounts[1], amount_base_units=2 * ONE_TOKEN, token_contract=usdc, sender=holder)
    assert devchain.token_balance(chain.w3, usdc, holder) == 3 * ONE_TOKEN


def test_pay_more_than_the_balance_fails(anvil_isolated):
    chain = anvil_isolated
    with pytest.raises(ContractLogicError):
        devchain.pay(
            chain.w3,
            to=fresh_address("too much"),
            amount_base_units=MINTED + 1,
            token_contract=chain.tokens["USDC"],
        )


# --- the token contract ---------------------------------------------------------


def test_only_the_deployer_can_mint(anvil_isolated):
    chain = anvil_isolated
    usdt = devchain.erc20(chain.w3, chain.tokens["USDT"])
    target = fresh_address("mint")
    with pytest.raises(ContractLogicError):
        usdt.functions.mint(target, 1).transact({"from": chain.accounts[0]})
    devchain.mint(chain.w3, token=usdt.address, to=target, amount_base_units=7 * ONE_TOKEN)
    assert usdt.functions.balanceOf(target).call() == 7 * ONE_TOKEN
    assert usdt.functions.totalSupply().call() == 10 * MINTED + 7 * ONE_TOKEN


def test_approve_and_transfer_from(anvil_isolated):
    chain = anvil_isolated
    owner, spender = chain.accounts[4], chain.accounts[5]
    target = fresh_address("transferFrom")
    usdc = devchain.erc20(chain.w3, chain.tokens["USDC"])

    receipt = chain.w3.eth.wait_for_transaction_receipt(
        usdc.functions.approve(spender, 10 * ONE_TOKEN).transact({"from": owner})
    )
    (approval,) = usdc.events.Approval().process_receipt(receipt)
    assert approval["args"]["value"] == 10 * ONE_TOKEN
    usdc.functions.transferFrom(owner, target, 4 * ONE_TOKEN).transact({"from": spender})
    assert usdc.functions.allowance(owner, spender).call() == 6 * ONE_TOKEN
    assert usdc.functions.balanceOf(target).call() == 4 * ONE_TOKEN
    assert usdc.functions.balanceOf(owner).call() == MINTED - 4 * ONE_TOKEN
    with pytest.raises(ContractLogicError):
        usdc.functions.transferFrom(owner, target, 7 * ONE_TOKEN).transact({"from": spender})


# --- reorgs -----------------------------------------------------------------------


def test_reorg_drops_an_unconfirmed_transfer(anvil_isolated):
    """Recommended recipe: anvil_reorg(depth, []) over the block holding the transfer.

    The chain keeps its height, the blocks from the transfer's block on get new
    hashes, the transfer is gone (no receipt, no log, no balance) and it is not
    put back in the mempool, so it stays gone as more blocks are mined.
    """
    chain = anvil_isolated
    usdc = chain.tokens["USDC"]
    recipient = fresh_address("reorged")
    tx_hash = devchain.pay(chain.w3, to=recipient, amount_base_units=50 * ONE_TOKEN, token_contract=usdc)
    tx_block = chain.w3.eth.get_transaction_receipt(tx_hash)["blockNumber"]
    chain.mine(1)  # one confirmation; LOCAL_EVM needs two
    height = chain.block_number
    old_hash = chain.w3.eth.get_block(tx_block)["hash"]
    parent_hash = chain.w3.eth.get_block(tx_block - 1)["hash"]
    assert transfer_logs_to(chain, usdc, recipient, tx_block)

    chain.reorg(depth=height - tx_block + 1)

    assert chain.block_number == height
    new_block = chain.w3.eth.get_block(tx_block)
    assert new_block["hash"] != old_hash
    assert new_block["parentHash"] == parent_hash  # the fork point is untouched
    assert new_block["transactions"] == []
    with pytest.raises(TransactionNotFound):
        chain.w3.eth.get_transaction_receipt(tx_hash)
    assert chain.rpc("eth_getTransactionByHash", tx_hash) is None
    assert transfer_logs_to(chain, usdc, recipient, tx_block) == []
    assert devchain.token_balance(chain.w3, usdc, recipient) == 0
    chain.mine(3)
    assert devchain.token_balance(chain.w3, usdc, recipient) == 0
    assert chain.rpc("txpool_status") == {"pending": "0x0", "queued": "0x0"}


def test_reorg_can_move_a_transfer_to_another_block(anvil_isolated):
    """anvil_reorg with the signed tx re-included: same tx hash, different block."""
    chain = anvil_isolated
    usdc = chain.tokens["USDC"]
    recipient = fresh_address("moved")
    tx_hash = devchain.pay(chain.w3, to=recipient, amount_base_units=ONE_TOKEN, token_contract=usdc)
    raw = chain.raw_transaction(tx_hash)
    old = chain.w3.eth.get_transaction_receipt(tx_hash)
    chain.mine(2)

    chain.reorg(depth=3, txs=[(raw, 2)])  # back into the third replacement block

    new = chain.w3.eth.get_transaction_receipt(tx_hash)
    assert new["blockNumber"] == old["blockNumber"] + 2
    assert new["blockHash"] != old["blockHash"]
    assert devchain.token_balance(chain.w3, usdc, recipient) == ONE_TOKEN


def test_snapshot_revert_rewinds_the_chain(anvil):
    """Alternative: evm_snapshot/evm_revert. The height goes *down*, unlike a real reorg."""
    recipient = fresh_address("reverted")
    snapshot_id = anvil.snapshot()
    height = anvil.block_number
    tx_hash = devchain.pay(anvil.w3, to=recipient, amount_base_units=ONE_TOKEN, token_contract=anvil.tokens["USDT"])
    anvil.mine(2)

    anvil.revert(snapshot_id)

    assert anvil.block_number == height
    with pytest.raises(TransactionNotFound):
        anvil.w3.eth.get_transaction_receipt(tx_hash)
    assert devchain.token_balance(anvil.w3, anvil.tokens["USDT"], recipient) == 0


def test_reorg_refuses_to_remove_the_token_deployment(anvil_isolated):
    with pytest.raises(ValueError, match="dev token deployment"):
        anvil_isolated.reorg(depth=anvil_isolated.block_number - anvil_isolated.base_block + 1)


# --- the node -----------------------------------------------------------------------


def test_start_anvil_refuses_a_busy_port(anvil):
    assert devchain.rpc_answers(anvil.url)
    with pytest.raises(devchain.DevChainError, match="already answers"):
        devchain.start_anvil(anvil.port)


def test_anvil_binary_comes_from_node_modules(monkeypatch):
    monkeypatch.delenv("KASSA_ANVIL_BIN", raising=False)
    expected = _REPO / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
    assert devchain.anvil_binary(_REPO) == expected
    assert devchain.anvil_binary() == expected
