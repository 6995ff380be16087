"""Which keys live mode takes, what identifies a key, and where a key's lost index sequence
restarts: pure logic over extended keys."""

from __future__ import annotations

import pytest

from kassa_common.chains.hd import TEST_XPUBS, InvalidXpub, is_mainnet_key, key_material, validate_xpub
from kassa_common.chains.live_keys import PUBLISHED_TEST_KEYS, PUBLISHED_WARNING, live_key_warning
from kassa_common.payments.addresses import first_unused, sequence_name
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


@pytest.mark.parametrize(
    "used, expected",
    [
        (set(), 0),
        ({0}, 1),
        (set(range(100)), 100),  # exactly one full window
        (set(range(101)), 101),
        (set(range(250)) - {20, 21, 130}, 250),  # a few indexes skipped by rolled-back payments
        (set(range(123_457)), 123_457),
    ],
)
def test_a_lost_sequence_restarts_after_the_last_address_payments_hold(used, expected):
    window, probes = 100, []

    def last_held(start: int):
        probes.append(start)
        return max((i for i in used if start <= i < start + window), default=None)

    assert first_unused(last_held, window) == expected
    assert len(probes) <= 2 * max(expected, 1).bit_length() + 2  # a few probes, not one per window
