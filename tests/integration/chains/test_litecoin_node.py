"""Kassa's Litecoin keys, descriptors and addresses against the real node (litecoind
-regtest, ``tests.support.litecoind``): where they disagree, litecoind is right."""

from __future__ import annotations

import os

import base58
import pytest
from bitcoin.core import Hash160
from bitcoin.wallet import CKey

from kassa_common.chains.addresses import InvalidAddress, receiving_address
from kassa_common.chains.descriptor import checksum, wallet_descriptors
from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.chains.networks import load_registry
from tests.support.litecoind import litecoin_node, litecoind  # noqa: F401  (fixtures)

KEY = TEST_XPUBS["litecoin"]  # a vpub: litecoind's regtest reads it as the tpub descriptors carry


def _base58(version: int) -> str:
    return base58.b58encode_check(bytes([version]) + Hash160(CKey(os.urandom(32)).pub)).decode()


def test_litecoind_derives_the_addresses_kassa_hands_out(litecoin_node):
    receive, change, origin = wallet_descriptors(KEY, chain="litecoin")
    body = receive.rpartition("#")[0]
    info = litecoin_node.rpc.getdescriptorinfo(body)
    assert info["checksum"] == checksum(body) and info["isrange"] and not info["hasprivatekeys"]
    assert origin == "73c5da0a/84h/1h/0h" and receive.startswith("wpkh([73c5da0a/84h/1h/0h]tpub")
    derived = litecoin_node.rpc.deriveaddresses(receive, [0, 9])
    assert derived == [derive_address("litecoin", KEY, i, bech32_hrp="rltc") for i in range(10)]
    test_range = litecoin_node.rpc.deriveaddresses(receive, [1_000_000_000, 1_000_000_002])  # test mode's indexes
    assert test_range == [derive_address("litecoin", KEY, 1_000_000_000 + i, bech32_hrp="rltc") for i in range(3)]
    assert litecoin_node.rpc.deriveaddresses(change, [0, 0]) != derived[:1]


def test_the_checksum_of_every_descriptor_kassa_writes_is_litecoinds(litecoin_node):
    for desc in wallet_descriptors(KEY, "0badf00d", chain="litecoin")[:2]:
        body, _, ours = desc.rpartition("#")
        assert litecoin_node.rpc.getdescriptorinfo(body)["checksum"] == ours


@pytest.fixture(scope="module")
def local():
    return load_registry({}).get("LOCAL_LITECOIN")


def test_kassa_takes_as_a_refund_address_what_litecoind_takes(litecoin_node, local):
    candidates = [
        litecoin_node.new_address(),  # rltc1q (the wallet's default: bech32)
        litecoin_node.rpc.getnewaddress("", "legacy"),  # m/n
        litecoin_node.rpc.getnewaddress("", "p2sh-segwit"),  # the node's script address form
        _base58(0x6F),  # P2PKH
        _base58(0x3A),  # Q… P2SH (SCRIPT_ADDRESS2)
        _base58(0xC4),  # 2… P2SH (SCRIPT_ADDRESS)
        _base58(0x30),  # L… (mainnet)
        _base58(0x32),  # M… (mainnet)
        _base58(0x05),  # 3… (mainnet's older form)
        _base58(0x00),  # Bitcoin's 1…
        derive_address("litecoin", KEY, 0, bech32_hrp="tltc"),
        derive_address("bitcoin", KEY, 0, bech32_hrp="bcrt"),
        derive_address("litecoin", KEY, 0, bech32_hrp="rltc").upper(),
    ]
    for text in candidates:
        node_says = bool(litecoin_node.rpc.validateaddress(text)["isvalid"])
        try:
            receiving_address(local, text)
            kassa_says = True
        except InvalidAddress:
            kassa_says = False
        assert kassa_says == node_says, text
    assert litecoin_node.rpc.getnewaddress("", "p2sh-segwit").startswith("Q")  # litecoind writes the 0x3a form


def test_the_node_is_on_the_chain_the_network_names(litecoin_node, local):
    info = litecoin_node.rpc.getblockchaininfo()
    assert info["chain"] == local.bitcoin_chain == "regtest"
    assert info["softforks"]["mweb"]["active"]  # as on Litecoin's mainnet
