"""Which keys live mode takes, and what identifies a key: pure logic over extended keys."""
from __future__ import annotations

import pytest

from kassa_common.chains.hd import TEST_XPUBS, InvalidXpub, is_mainnet_key, key_material, validate_xpub
from kassa_common.chains.live_keys import PUBLISHED_TEST_KEYS, PUBLISHED_WARNING, live_key_warning
from kassa_common.payments.addresses import sequence_name
from tests.support.keys import encoded, fresh_key

ENCODINGS = ("xpub", "zpub", "tpub", "vpub")


def test_one_key_in_every_encoding_is_one_key_material_and_one_index_sequence():
    key = fresh_key()
    assert len({key_material("bitcoin", encoded(key, p)) for p in ENCODINGS}) == 1
    assert len({sequence_name("bitcoin", encoded(key, p)) for p in ENCODINGS}) == 1
    assert key_material("bitcoin", key) != key_material("bitcoin", fresh_key())
    assert sequence_name("evm", key) != sequence_name("bitcoin", key)  # different addresses, own sequences


@pytest.mark.parametrize("prefix, mainnet", [("xpub", True), ("zpub", True), ("tpub", False), ("vpub", False)])
def test_mainnet_or_testnet_is_read_from_the_encoding(prefix, mainnet):
    assert is_mainnet_key("bitcoin", encoded(fresh_key(), prefix)) is mainnet


@pytest.mark.parametrize("key", PUBLISHED_TEST_KEYS)
@pytest.mark.parametrize("prefix", ENCODINGS)
def test_a_published_key_is_recognised_in_any_encoding(key, prefix):
    bitcoin_key = encoded(key, prefix)
    with pytest.raises(InvalidXpub, match="published test key"):
        live_key_warning("bitcoin", bitcoin_key, allow_test_keys=False)
    assert live_key_warning("bitcoin", bitcoin_key, allow_test_keys=True) == PUBLISHED_WARNING


def test_the_test_mode_keys_are_published_keys():
    for chain, key in TEST_XPUBS.items():
        assert live_key_warning(chain, key, allow_test_keys=True) == PUBLISHED_WARNING


@pytest.mark.parametrize("allow_test_keys", [False, True])
def test_a_testnet_key_is_refused_even_where_published_keys_are_allowed(allow_test_keys):
    with pytest.raises(InvalidXpub, match="testnet key"):
        live_key_warning("evm", fresh_key("tpub"), allow_test_keys=allow_test_keys)


@pytest.mark.parametrize("chain, prefix", [("evm", "xpub"), ("bitcoin", "xpub"), ("bitcoin", "zpub")])
def test_an_own_mainnet_key_is_taken_without_a_word(chain, prefix):
    assert live_key_warning(chain, fresh_key(prefix), allow_test_keys=False) is None


def test_a_bip49_key_is_refused_with_what_to_enter_instead():
    with pytest.raises(InvalidXpub, match=r"BIP49 key .* BIP84 account key \(zpub"):
        validate_xpub("bitcoin", fresh_key("ypub"))
