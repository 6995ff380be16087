"""Litecoin (DESIGN §15): its networks, the addresses a merchant's BIP84 Litecoin key derives,
the addresses a refund may go to, its payment URI and descriptors. The keys are the BIP39
test mnemonic's ("abandon ... about"), whose m/84'/2'/0'/0/i addresses wallet libraries
publish; tests/integration/chains/test_litecoin_node.py checks the same against litecoind."""

from __future__ import annotations

import pytest

from kassa_common.chains.addresses import InvalidAddress, receiving_address
from kassa_common.chains.descriptor import checksum_valid, wallet_descriptors, xpub_form
from kassa_common.chains.hd import TEST_XPUBS, InvalidXpub, derive_address, key_material, mode_hrp, validate_xpub
from kassa_common.chains.live_keys import live_key_warning
from kassa_common.chains.networks import load_registry
from kassa_common.chains.uris import payment_request
from kassa_common.payments.addresses import first_address, payment_address

# m/84'/2'/0' of "abandon ... about" in the encodings wallets show it: SLIP-132's zpub
# (Electrum-LTC's native segwit), Electrum-LTC's Ltub and Litecoin Core's xpub.
ZPUB = "zpub6rPo5mF47z5coVm5rvWv7fv181awb7Vckn5Cf3xQXBVKu18kuBHDhNi1Jrb4br6vVD3ZbrnXemEsWJoR18mZwkUdzwD8TQnHDUCGxqZ6swA"
LTUB = "Ltub2ZANw57Fi4JfMGenngwfZMqDrsccTf2m3qEjvLuk8faGXB973sSqGttAdKBvGSCLG9DXh2yxaUB9qpwQUe2zCCtrZPhjxGuMAWqL6F7Xrpd"
XPUB = "xpub6CjGURuDpczf6uNrCCwfhVizn5J3hsWcvZ2m6GAdmAjZnoWJPrx6TFPjGSftc2o5fvox6ubQjSXmjjaHZjwYMH7SGFpHHb9Jg24zBf66mbE"
PUBLISHED = {  # m/84'/2'/0'/0/i
    0: "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh",
    1: "ltc1qwlezpr3890hcp6vva9twqh27mr6edadreqvhnn",
}
# the same key with Electrum-LTC's BIP49 version bytes
MTUB = "Mtub2szeEjnArjr9CZqud3jHmSvj2qm4QH2FxwkxhjodWfx9aGxLJXcPtxYJeX9WGLrFfnLLSWaX38Xhj7YyCLSzzSaTRjQAYBiqSEtyUmdErKR"


@pytest.fixture(scope="module")
def registry():
    return load_registry({})


def test_the_litecoin_networks(registry):
    main, local = registry.get("litecoin"), registry.get("LOCAL_LITECOIN")
    assert (main.kind, main.key_chain, main.bech32_hrp, main.bitcoin_chain) == ("bitcoin", "litecoin", "ltc", "main")
    assert (main.required_confirmations, main.block_time, main.dev) == (6, 150.0, False)
    assert (local.kind, local.key_chain, local.bech32_hrp, local.bitcoin_chain) == (
        "bitcoin",
        "litecoin",
        "rltc",
        "regtest",
    )
    assert local.dev and local.required_confirmations == 2
    for net in (main, local):
        (ltc,) = net.tokens
        assert (ltc.symbol, ltc.decimals, ltc.native, ltc.contract) == ("LTC", 8, True, None)
    assert registry.get("BITCOIN").key_chain == "bitcoin" and registry.get("BASE").key_chain == "evm"
    assert load_registry({"LOCAL_LITECOIN_CONFIRMATIONS": "3"}).get("LOCAL_LITECOIN").required_confirmations == 3


def test_a_network_whose_wallet_chain_does_not_fit_its_kind_is_refused(tmp_path):
    bad = tmp_path / "networks.json"
    bad.write_text(
        '{"networks": [{"name": "X", "kind": "evm", "wallet_chain": "litecoin", "chain_id": 1,'
        ' "required_confirmations": 1, "block_time": 1, "tokens": []}]}'
    )
    with pytest.raises(ValueError, match="wallet_chain"):
        load_registry({}, str(bad))


@pytest.mark.parametrize("key", [ZPUB, LTUB, XPUB])
def test_every_encoding_of_a_litecoin_account_key_derives_the_published_addresses(key):
    for index, address in PUBLISHED.items():
        assert derive_address("litecoin", key, index) == address
    assert key_material("litecoin", key) == key_material("litecoin", ZPUB)


def test_the_test_and_regtest_forms_are_the_same_key_hash_under_another_prefix():
    main = derive_address("litecoin", ZPUB, 0)
    program = main[len("ltc1") : -6]
    assert derive_address("litecoin", ZPUB, 0, bech32_hrp="tltc")[len("tltc1") : -6] == program
    assert derive_address("litecoin", ZPUB, 0, bech32_hrp="rltc")[len("rltc1") : -6] == program


def test_a_testnet_key_never_yields_a_mainnet_litecoin_address():
    vpub = TEST_XPUBS["litecoin"]
    assert derive_address("litecoin", vpub, 0).startswith("tltc1q")
    assert derive_address("litecoin", vpub, 0, bech32_hrp="rltc").startswith("rltc1q")
    assert mode_hrp("ltc", True) == "tltc" and mode_hrp("rltc", True) == "rltc" and mode_hrp("ltc", False) == "ltc"


def test_prefixes_and_keys_of_the_other_coin_are_refused():
    with pytest.raises(ValueError, match="unsupported bech32 prefix 'bc' for litecoin"):
        derive_address("litecoin", ZPUB, 0, bech32_hrp="bc")
    with pytest.raises(ValueError, match="for bitcoin"):
        derive_address("bitcoin", ZPUB, 0, bech32_hrp="ltc")
    with pytest.raises(InvalidXpub, match="cannot be used for bitcoin"):
        validate_xpub("bitcoin", LTUB)  # Electrum-LTC's encoding says Litecoin
    with pytest.raises(InvalidXpub, match="BIP49"):
        validate_xpub("litecoin", MTUB)
    with pytest.raises(InvalidXpub, match="private"):
        validate_xpub("litecoin", "Ltpv" + LTUB[4:])


def test_payments_take_the_litecoin_form_of_their_network_and_mode(registry):
    vpub = TEST_XPUBS["litecoin"]
    assert first_address("litecoin", ZPUB, test_mode=False) == PUBLISHED[0]
    assert first_address("litecoin", ZPUB, test_mode=True).startswith("tltc1q")
    assert payment_address(registry.get("LITECOIN"), ZPUB, 1, test_mode=False) == PUBLISHED[1]
    assert payment_address(registry.get("LITECOIN"), ZPUB, 1, test_mode=True).startswith("tltc1q")
    assert payment_address(registry.get("LOCAL_LITECOIN"), vpub, 0, test_mode=False).startswith("rltc1q")


def test_live_mode_refuses_the_published_litecoin_key():
    for key in (ZPUB, LTUB, XPUB):
        with pytest.raises(InvalidXpub, match="published test key"):
            live_key_warning("litecoin", key, allow_test_keys=False)
    assert live_key_warning("litecoin", LTUB, allow_test_keys=True) is not None


def test_the_payment_uri_is_litecoins(registry):
    net = registry.get("LITECOIN")
    assert payment_request(net, "LTC", PUBLISHED[0], 123_456_789, 8) == f"litecoin:{PUBLISHED[0]}?amount=1.23456789"
    assert payment_request(registry.get("BITCOIN"), "BTC", "bc1x", 10, 8) == "bitcoin:bc1x?amount=0.0000001"


@pytest.mark.parametrize(
    "text",
    [
        PUBLISHED[0],
        PUBLISHED[0].upper(),
        "LdP8Qox1VAhCzLJNqrr74YovaWYyNBUWvL",  # P2PKH (0x30)
        "MQMHBtvnBfxTzt3K2bdxgSE7qZPHSXWsGM",  # P2SH (0x32)
        "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy",  # P2SH the older way (0x05), which litecoind still takes
    ],
)
def test_litecoin_refund_addresses(registry, text):
    assert receiving_address(registry.get("LITECOIN"), text) in (text, text.lower())


@pytest.mark.parametrize(
    "text, network, reason",
    [
        ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "LITECOIN", "a Bitcoin address"),
        (PUBLISHED[0], "BITCOIN", "a Litecoin address"),
        (PUBLISHED[0], "LOCAL_LITECOIN", "another Litecoin network"),
        ("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "LITECOIN", "not a Litecoin address"),
        ("mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "LITECOIN", "another Litecoin network"),
        ("Qd474mK5s7fUYMA1DxJWZSQQsbSq6maeug", "LITECOIN", "another Litecoin network"),  # test P2SH (0x3a)
        ("MQMHBtvnBfxTzt3K2bdxgSE7qZPHSXWsGM", "LOCAL_LITECOIN", "another Litecoin network"),
        ("ltcmweb1qqt0wz5z2yd3dpxhj8qfyyzufn8n6u8ml5d5hgd83vqggzc4e4z5gqqq2wzr0t", "LITECOIN", "MWEB"),
    ],
)
def test_bad_litecoin_refund_addresses_say_why(registry, text, network, reason):
    with pytest.raises(InvalidAddress, match=reason):
        receiving_address(registry.get(network), text)


def test_descriptors_of_a_litecoin_key_are_litecoin_cores():
    assert xpub_form(ZPUB, "litecoin") == XPUB and xpub_form(LTUB, "litecoin") == XPUB
    d = wallet_descriptors(LTUB, "73c5da0a", chain="litecoin")
    assert d.origin == "73c5da0a/84h/2h/0h"
    assert d.receive.startswith(f"wpkh([73c5da0a/84h/2h/0h]{XPUB}/0/*)#") and checksum_valid(d.receive)
    assert d.change.startswith(f"wpkh([73c5da0a/84h/2h/0h]{XPUB}/1/*)#") and checksum_valid(d.change)
    assert wallet_descriptors(TEST_XPUBS["litecoin"], chain="litecoin").origin == "73c5da0a/84h/1h/0h"
