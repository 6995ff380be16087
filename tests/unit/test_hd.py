"""HD address derivation against public BIP32/BIP44/BIP84 test vectors."""

import base58
import pytest

from kassa_common.chains.hd import TEST_XPUBS, InvalidXpub, derive_address, validate_xpub

# Account keys of the BIP39 test mnemonic "abandon ... about" (empty passphrase).
EVM_XPUB = (
    "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt"
)
BIP84_ZPUB = (
    "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
)
BIP84_VPUB = (
    "vpub5Y6cjg78GGuNLsaPhmYsiw4gYX3HoQiRBiSwDaBXKUafCt9bNwWQiitDk5VZ5BVxYnQdwoTyXSs2JHRPAgjAvtbBrf8ZhDYe2jWAqvZVnsc"
)
EVM_XPRV = (
    "xprv9zDSoJv1aBcjX6sNgEpE2J9K6MV2MUnXuqXsFgzVn3zY2aHyupaFQdYCtdCbNMkvcTdx9FeN49sgXw6mjrhrFLRSzJVnRYPfSCCgjeg4GxY"
)
BIP84_ZPRV = (
    "zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9iefm1yYNZKEm7z6qUWCroSQnE"
)
# BIP32 test vector 1, master (depth 0) public key.
BIP32_TV1_MASTER = (
    "xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8"
)


def _with_version(xkey: str, version_hex: str) -> str:
    return base58.b58encode_check(bytes.fromhex(version_hex) + base58.b58decode_check(xkey)[4:]).decode()


def test_evm_addresses_match_known_vectors():
    assert derive_address("evm", EVM_XPUB, 0) == "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"
    assert derive_address("evm", EVM_XPUB, 1) == "0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0"


def test_bip84_mainnet_vectors():
    assert derive_address("bitcoin", BIP84_ZPUB, 0) == "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
    assert derive_address("bitcoin", BIP84_ZPUB, 1, bech32_hrp="bc") == "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"


def test_bitcoin_accepts_plain_xpub_version():
    xpub = _with_version(BIP84_ZPUB, "0488b21e")
    assert xpub.startswith("xpub")
    assert derive_address("bitcoin", xpub, 0) == "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"


def test_bip84_testnet_and_regtest():
    assert derive_address("bitcoin", BIP84_VPUB, 0, bech32_hrp="tb") == "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"
    assert derive_address("bitcoin", BIP84_VPUB, 0, bech32_hrp="bcrt") == "bcrt1q6rz28mcfaxtmd6v789l9rrlrusdprr9pz3cppk"
    tpub = _with_version(BIP84_VPUB, "043587cf")
    assert tpub.startswith("tpub")
    assert derive_address("bitcoin", tpub, 0, bech32_hrp="tb") == "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"


def test_test_xpubs_are_the_published_test_keys():
    assert TEST_XPUBS == {"evm": EVM_XPUB, "bitcoin": BIP84_VPUB, "litecoin": BIP84_VPUB}  # coin type 1: any testnet


def test_test_bitcoin_key_never_gives_mainnet_address():
    tb0 = "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"
    assert derive_address("bitcoin", TEST_XPUBS["bitcoin"], 0) == tb0
    assert derive_address("bitcoin", TEST_XPUBS["bitcoin"], 0, bech32_hrp="bc") == tb0


def test_mainnet_key_follows_requested_test_prefix():
    # Same key hash as bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu, on regtest.
    address = derive_address("bitcoin", BIP84_ZPUB, 0, bech32_hrp="bcrt")
    assert address.startswith("bcrt1q")
    from bitcoin.segwit_addr import decode as segwit_decode

    assert segwit_decode("bcrt", address) == segwit_decode("bc", "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu")


def test_validate_strips_whitespace_and_derive_accepts_padding():
    assert validate_xpub("evm", f"  {EVM_XPUB}\n") == EVM_XPUB
    assert derive_address("evm", f" {EVM_XPUB} ", 0) == "0x9858EfFD232B4033E47d90003D41EC34EcaEda94"


def test_depth_zero_master_key_is_accepted():
    assert validate_xpub("evm", BIP32_TV1_MASTER) == BIP32_TV1_MASTER
    assert derive_address("evm", BIP32_TV1_MASTER, 0).startswith("0x")


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "   ",
        "hello",
        "xpub",
        "0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
        EVM_XPUB[:-5],
        "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnAT0",
    ],
)
def test_garbage_is_rejected(garbage):
    with pytest.raises(InvalidXpub):
        validate_xpub("evm", garbage)


def test_wrong_checksum_is_rejected():
    bad = EVM_XPUB[:-1] + ("u" if EVM_XPUB[-1] != "u" else "v")
    with pytest.raises(InvalidXpub, match="checksum"):
        validate_xpub("evm", bad)


@pytest.mark.parametrize("chain,key", [("evm", EVM_XPRV), ("bitcoin", BIP84_ZPRV), ("evm", " " + EVM_XPRV)])
def test_private_keys_are_rejected(chain, key):
    with pytest.raises(InvalidXpub, match="private"):
        validate_xpub(chain, key)


def test_private_key_with_typo_is_still_called_private():
    typo = EVM_XPRV[:-1] + ("1" if EVM_XPRV[-1] != "1" else "2")
    with pytest.raises(InvalidXpub, match="private"):
        validate_xpub("evm", typo)


def test_private_version_bytes_are_rejected():
    raw = base58.b58decode_check(EVM_XPRV)
    relabelled = base58.b58encode_check(bytes.fromhex("04358394") + raw[4:]).decode()  # tprv
    with pytest.raises(InvalidXpub, match="private"):
        validate_xpub("evm", relabelled)


def test_wrong_length_is_rejected():
    raw = base58.b58decode_check(EVM_XPUB)
    with pytest.raises(InvalidXpub, match="length"):
        validate_xpub("evm", base58.b58encode_check(raw + b"\0").decode())


def test_point_not_on_curve_is_rejected():
    raw = bytearray(base58.b58decode_check(EVM_XPUB))
    raw[45] = 0x04
    with pytest.raises(InvalidXpub, match="compressed public key"):
        validate_xpub("evm", base58.b58encode_check(bytes(raw)).decode())
    raw[45] = 0x02
    raw[46:] = b"\xff" * 32  # x >= field prime
    with pytest.raises(InvalidXpub, match="curve"):
        validate_xpub("evm", base58.b58encode_check(bytes(raw)).decode())


@pytest.mark.parametrize("key", [BIP84_ZPUB, BIP84_VPUB])
def test_bitcoin_segwit_keys_are_rejected_for_evm(key):
    with pytest.raises(InvalidXpub, match="evm"):
        validate_xpub("evm", key)


def test_bip49_ypub_is_rejected_for_bitcoin():
    with pytest.raises(InvalidXpub, match="ypub"):
        validate_xpub("bitcoin", _with_version(BIP84_ZPUB, "049d7cb2"))


@pytest.mark.parametrize("index", [-1, 2**31, 1.0, True, "0"])
def test_bad_index_is_rejected(index):
    with pytest.raises(ValueError):
        derive_address("evm", EVM_XPUB, index)


def test_unknown_chain_and_hrp_are_rejected():
    with pytest.raises(ValueError, match="chain"):
        derive_address("solana", EVM_XPUB, 0)
    with pytest.raises(ValueError, match="prefix"):
        derive_address("bitcoin", BIP84_ZPUB, 0, bech32_hrp="ltc")


def test_addresses_are_distinct_per_index():
    addresses = {derive_address("evm", EVM_XPUB, i) for i in range(50)}
    assert len(addresses) == 50


def test_encodings_agree_with_reference_libraries():
    """The built-in EIP-55 and bech32 encoders match eth_utils and python-bitcoinlib."""
    from bitcoin.segwit_addr import decode as segwit_decode
    from eth_utils import is_checksum_address

    for i in range(0, 400, 7):
        evm = derive_address("evm", EVM_XPUB, i)
        assert is_checksum_address(evm)
        for hrp, key in (("bc", BIP84_ZPUB), ("tb", BIP84_VPUB), ("bcrt", BIP84_VPUB)):
            version, program = segwit_decode(hrp, derive_address("bitcoin", key, i, bech32_hrp=hrp))
            assert version == 0 and len(program) == 20
