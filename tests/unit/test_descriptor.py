"""Watch-only descriptors: the BIP 380 checksum against published vectors, the xpub form of a
key whatever its encoding, the descriptor strings, and the gap arithmetic."""

from __future__ import annotations

import hashlib
import hmac
import re

import base58
import coincurve
import pytest

from kassa_common.chains import descriptor
from kassa_common.chains.descriptor import (
    KNOWN_FINGERPRINTS,
    checksum,
    checksum_valid,
    key_origin,
    wallet_descriptors,
    xpub_form,
)
from kassa_common.chains.hd import TEST_XPUBS, derive_address
from kassa_common.payments.gap import DEFAULT_GAP_LIMIT, GAP_MARGIN, Gap, gap_of
from tests.support.keys import encoded, fresh_key

# BIP 84's test vector: the account key m/84'/0'/0' of "abandon ... about" (also in test_hd).
BIP84_ZPUB = (
    "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
)
BIP84_XPUB = encoded(BIP84_ZPUB, "xpub")


# ---- the checksum: BIP 380's test vectors ----------------------------------------------------


def test_bip380_valid_checksum_vector():
    assert checksum("raw(deadbeef)") == "89f8spxm"
    assert checksum_valid("raw(deadbeef)#89f8spxm")


@pytest.mark.parametrize(
    "text",
    [
        "raw(deadbeef)",  # no checksum
        "raw(deadbeef)#",  # missing checksum
        "raw(deadbeef)#89f8spxmx",  # too long checksum (9 chars)
        "raw(deadbeef)#89f8spx",  # too short checksum (7 chars)
        "raw(deedbeef)#89f8spxm",  # error in payload
        "raw(deedbeef)##9f8spxm",  # error in checksum
        "raw(Ü)#00000000",  # invalid characters in payload
    ],
)
def test_bip380_invalid_checksum_vectors(text):
    assert not checksum_valid(text)


def test_bitcoin_core_wpkh_vector():
    # src/wallet/test/walletload_tests.cpp in Bitcoin Core: a BIP84 receive descriptor with its origin.
    body = (
        "wpkh([d34db33f/84h/0h/0h]xpub6DJ2dNUysrn5Vt36jH2KLBT2i1auw1tTSSomg8PhqNiUtx8QX2SvC9nrHu81fT41fvDUnhMj"
        "EzQgXnQjKEu3oaqMSzhSrHMxyyoEAmUHQbY/0/*)"
    )
    assert checksum(body) == "cjjspncu"
    assert checksum_valid(body + "#cjjspncu")


def test_addr_example_agreed_by_other_implementations():
    # Not a BIP 380 vector: the getdescriptorinfo example other descriptor libraries test against.
    assert checksum("addr(mkmZxiEcEd8ZqjQWVZuC6so5dFMKEFpN2j)") == "02wpgw69"


def test_characters_outside_the_descriptor_set_are_refused():
    with pytest.raises(ValueError, match="cannot appear"):
        checksum("raw(Ü)")


def test_every_single_character_change_is_detected():
    good = wallet_descriptors(BIP84_ZPUB).receive
    body, mark = good.split("#")
    for position in range(0, len(body), 7):
        changed = body[:position] + ("0" if body[position] != "0" else "1") + body[position + 1 :]
        assert not checksum_valid(f"{changed}#{mark}")


# ---- the key in descriptor form -----------------------------------------------------------------


def test_zpub_becomes_the_xpub_of_the_same_key():
    assert xpub_form(BIP84_ZPUB) == BIP84_XPUB and BIP84_XPUB.startswith("xpub")
    assert xpub_form(BIP84_XPUB) == BIP84_XPUB


def test_vpub_becomes_a_tpub():
    tpub = xpub_form(TEST_XPUBS["bitcoin"])
    assert tpub.startswith("tpub") and tpub == encoded(TEST_XPUBS["bitcoin"], "tpub")


@pytest.mark.parametrize("mainnet", [True, False])
def test_every_encoding_of_a_key_gives_the_same_descriptors(mainnet):
    key = fresh_key("zpub" if mainnet else "vpub")
    forms = [key, encoded(key, "xpub" if mainnet else "tpub")]
    assert wallet_descriptors(forms[0]) == wallet_descriptors(forms[1])


def test_descriptor_strings():
    d = wallet_descriptors(BIP84_ZPUB)
    assert d.origin is None  # an account xpub does not say its master fingerprint
    assert re.fullmatch(r"wpkh\(xpub[1-9A-HJ-NP-Za-km-z]{107}/0/\*\)#[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{8}", d.receive)
    assert d.receive.startswith(f"wpkh({BIP84_XPUB}/0/*)#") and d.change.startswith(f"wpkh({BIP84_XPUB}/1/*)#")
    assert checksum_valid(d.receive) and checksum_valid(d.change)


def test_key_origin_when_the_fingerprint_is_given():
    d = wallet_descriptors(BIP84_ZPUB, fingerprint="73C5DA0A")
    assert d.origin == "73c5da0a/84h/0h/0h"
    assert d.receive.startswith(f"wpkh([73c5da0a/84h/0h/0h]{BIP84_XPUB}/0/*)#") and checksum_valid(d.receive)
    with pytest.raises(ValueError, match="8 hex"):
        key_origin(BIP84_ZPUB, "73c5da0")


def _child_private(key: bytes, chain_code: bytes, index: int) -> tuple[bytes, bytes]:
    """BIP32 private child derivation (hardened only): enough to re-derive the test account."""
    digest = hmac.digest(chain_code, b"\0" + key + index.to_bytes(4, "big"), "sha512")
    n = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
    return ((int.from_bytes(digest[:32], "big") + int.from_bytes(key, "big")) % n).to_bytes(32, "big"), digest[32:]


def test_the_published_test_key_carries_its_known_origin():
    # Re-derive m/84'/1'/0' from the mnemonic: the key is TEST_XPUBS["bitcoin"] and the master's
    # fingerprint is the one the descriptor states.
    seed = hashlib.pbkdf2_hmac("sha512", b"abandon " * 11 + b"about", b"mnemonic", 2048)
    digest = hmac.digest(b"Bitcoin seed", seed, "sha512")
    key, chain_code = digest[:32], digest[32:]
    master = coincurve.PrivateKey(key).public_key.format()
    fingerprint = hashlib.new("ripemd160", hashlib.sha256(master).digest()).digest()[:4].hex()
    parent = None
    for index in (84, 1, 0):
        parent = coincurve.PrivateKey(key).public_key.format()
        key, chain_code = _child_private(key, chain_code, 0x80000000 + index)
    parent_fp = hashlib.new("ripemd160", hashlib.sha256(parent).digest()).digest()[:4]
    vpub = base58.b58encode_check(
        bytes.fromhex("045f1cf6")
        + bytes([3])
        + parent_fp
        + (0x80000000).to_bytes(4, "big")
        + chain_code
        + coincurve.PrivateKey(key).public_key.format()
    ).decode()
    assert vpub == TEST_XPUBS["bitcoin"] and KNOWN_FINGERPRINTS[vpub] == fingerprint == "73c5da0a"
    d = wallet_descriptors(TEST_XPUBS["bitcoin"])
    assert d.origin == "73c5da0a/84h/1h/0h" and d.receive.startswith("wpkh([73c5da0a/84h/1h/0h]tpub")


def test_the_descriptor_key_derives_kassa_addresses():
    # The descriptor's key (re-encoded) derives the same /0/i addresses Kassa hands out.
    xpub = descriptor.xpub_form(BIP84_ZPUB)
    assert (
        derive_address("bitcoin", xpub, 0)
        == derive_address("bitcoin", BIP84_ZPUB, 0)
        == "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
    )


def test_a_key_below_account_depth_has_no_origin_path():
    master = "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8"  # noqa: E501
    assert key_origin(master) is None
    with pytest.raises(ValueError, match="depth 0"):
        key_origin(master, "deadbeef")


# ---- the gap arithmetic ---------------------------------------------------------------------------


def test_gap_runs_between_funded_indexes_and_after_the_last():
    assert gap_of([], None) == Gap(0, 0, 0, None, None, None)
    none_paid = gap_of([], 4)
    assert (none_paid.handed_out, none_paid.longest_run, none_paid.run_from, none_paid.run_to) == (5, 5, 0, 4)
    mixed = gap_of([0, 3, 27], 29)  # 1-2 unused, 4-26 unused, 28-29 unused
    assert (mixed.longest_run, mixed.run_from, mixed.run_to, mixed.funded) == (23, 4, 26, 3)
    trailing = gap_of([0, 1, 2], 40)
    assert (trailing.longest_run, trailing.run_from, trailing.run_to) == (38, 3, 40)
    dense = gap_of([0, 1, 2], 2)
    assert (dense.longest_run, dense.run_from) == (0, None)


def test_gap_limit_and_warning():
    assert gap_of([0, 1], 1).gap_limit == DEFAULT_GAP_LIMIT and not gap_of([0, 1], 1).over_default
    nineteen = gap_of([0, 20], 20)
    assert nineteen.longest_run == 19 and not nineteen.over_default and nineteen.warning() is None
    twenty = gap_of([0, 21], 21)  # 20 unused: a wallet at gap limit 20 stops before index 21
    assert twenty.over_default and "at least 40" in twenty.warning() and twenty.gap_limit == 20 + GAP_MARGIN
    assert twenty.range_end == 21 + twenty.gap_limit
    assert any("change_gap_limit(40)" in line for line in twenty.advice())
