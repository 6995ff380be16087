"""A refund's destination checked per network (kassa_common.chains.addresses), with the
BIP173/BIP350 and EIP-55 test vectors. Pure logic: no database."""

from __future__ import annotations

import pytest

from kassa_common.chains.addresses import InvalidAddress, bitcoin_address, evm_address, receiving_address
from kassa_common.chains.networks import shipped

EIP55 = [  # EIP-55's own examples
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
]


@pytest.mark.parametrize("address", EIP55)
def test_evm_addresses_in_any_single_case_or_right_mixed_case_pass_checksummed(address):
    assert evm_address(address) == address
    assert evm_address(address.lower()) == address
    assert evm_address("0x" + address[2:].upper()) == address


@pytest.mark.parametrize(
    "text, reason",
    [
        (EIP55[0][:-1] + "D", "checksum"),  # one letter's case flipped
        ("0x" + "00" * 20, "zero address"),
        ("0x" + "ab" * 19, "40 hexadecimal"),
        ("0x" + "gg" * 20, "40 hexadecimal"),
        ("5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "40 hexadecimal"),
    ],
)
def test_bad_evm_addresses_say_why(text, reason):
    with pytest.raises(InvalidAddress, match=reason):
        evm_address(text)


@pytest.mark.parametrize(
    "address, hrp",
    [
        ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bc"),  # P2WPKH
        ("bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3", "bc"),  # P2WSH
        ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "bc"),  # taproot (bech32m)
        ("BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4", "bc"),
        ("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2", "bc"),  # P2PKH
        ("3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy", "bc"),  # P2SH
        ("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", "bcrt"),
        ("mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "bcrt"),  # testnet/regtest P2PKH
        ("tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx", "tb"),
    ],
)
def test_the_networks_bitcoin_forms_pass(address, hrp):
    assert bitcoin_address(address, hrp) in (address, address.lower())


@pytest.mark.parametrize(
    "address, hrp, reason",
    [
        ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "bc", "checksum"),
        ("bC1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bc", "mixed"),
        # a v0 program with the bech32m checksum and a v1 program with bech32's (BIP350)
        ("bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd", "bc", "checksum"),
        ("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", "bc", "another Bitcoin network"),
        ("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bcrt", "another Bitcoin network"),
        ("mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn", "bc", "another Bitcoin network"),
        ("1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3", "bc", "not a Bitcoin address"),
        ("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "bc", "not a Bitcoin address"),
    ],
)
def test_bad_bitcoin_addresses_say_why(address, hrp, reason):
    with pytest.raises(InvalidAddress, match=reason):
        bitcoin_address(address, hrp)


def test_receiving_address_picks_the_networks_rules():
    networks = shipped()
    assert receiving_address(networks.get("BASE"), f"  {EIP55[0].lower()} ") == EIP55[0]
    assert receiving_address(networks.get("BITCOIN_REGTEST"), "mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn")
    with pytest.raises(InvalidAddress, match="required"):
        receiving_address(networks.get("BASE"), "  ")
    with pytest.raises(InvalidAddress, match="too long"):
        receiving_address(networks.get("BITCOIN"), "bc1" + "q" * 200)
