"""Is this text an address that can receive funds on this network? (A refund's destination.)

EVM: ``0x`` and 40 hex digits, with a right EIP-55 checksum when mixed-case, and not the
zero address (``forwarder.settlement_address``'s rules). Bitcoin family (Bitcoin, Litecoin):
the network's segwit addresses (BIP173 bech32 for version 0, BIP350 bech32m for version 1,
taproot, with the network's prefix) and its base58check P2PKH and P2SH addresses (Litecoin's
``L…``/``M…``, and the older ``3…`` script addresses litecoind still takes; on its test
networks ``m…``/``n…``, ``Q…`` and ``2…``). Litecoin's MWEB addresses (``ltcmweb1…``) are not
payable from an ordinary transaction output: refused. Witness versions 2 to 16
are valid BIP350 strings but no wallet can spend from them yet (they are reserved for
future soft forks, and anyone could spend them if one gave them meaning): refused. ``InvalidAddress`` says why
not, in words a customer understands.
"""

from __future__ import annotations

import base58

from kassa_common.chains.bech32 import CHARSET, hrp_state, polymod
from kassa_common.chains.forwarder import settlement_address
from kassa_common.chains.hd import CHAIN_HRPS
from kassa_common.chains.networks import Network

BECH32_CONST = 1
BECH32M_CONST = 0x2BC830A3
KNOWN_PREFIXES = ("bc", "tb", "bcrt", "ltc", "tltc", "rltc")
# base58check version bytes of a network (by its bech32 prefix): P2PKH, then P2SH (as the
# chain's node decodes them: Litecoin Core takes both its SCRIPT_ADDRESS and SCRIPT_ADDRESS2)
_TEST_BITCOIN, _TEST_LITECOIN = (0x6F, 0xC4), (0x6F, 0x3A, 0xC4)
BASE58_VERSIONS = {
    "bc": (0x00, 0x05),
    "tb": _TEST_BITCOIN,
    "bcrt": _TEST_BITCOIN,
    "ltc": (0x30, 0x32, 0x05),
    "tltc": _TEST_LITECOIN,
    "rltc": _TEST_LITECOIN,
}


def _coin(hrp: str) -> str:
    """The coin of the network with bech32 prefix ``hrp``, as a customer names it."""
    return next((chain.capitalize() for chain, hrps in CHAIN_HRPS.items() if hrp in hrps), "Bitcoin")


class InvalidAddress(ValueError):
    """The reason, as a sentence."""


def evm_address(text: str) -> str:
    """The EIP-55 form of an EVM address, or InvalidAddress."""
    if not text.startswith("0x"):
        raise InvalidAddress("not an address of this network: 0x followed by 40 hexadecimal digits")
    try:
        return settlement_address(text)
    except ValueError as exc:
        message = str(exc)
        if "checksum" in message:
            raise InvalidAddress("the address has a wrong EIP-55 checksum (mixed case): check it for a typo") from None
        if "zero address" in message:
            raise InvalidAddress("the zero address cannot receive funds") from None
        raise InvalidAddress("not an address of this network: 0x followed by 40 hexadecimal digits") from None


def _convert_bits(data: list[int]) -> bytes | None:
    """5-bit groups to bytes; None when the padding is not zeros of less than a group."""
    acc, bits, out = 0, 0, bytearray()
    for value in data:
        acc = (acc << 5) | value
        bits += 5
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    if bits >= 5 or (acc << (8 - bits)) & 0xFF:
        return None
    return bytes(out)


def _segwit(text: str, hrp: str) -> str | None:
    """The address in lower case if it is a valid segwit address with this prefix; None when
    it is not bech32 at all; InvalidAddress when it is, but wrong."""
    lower = text.lower()
    prefix, sep, data_part = lower.rpartition("1")
    if not sep or prefix not in {hrp, *KNOWN_PREFIXES}:
        return None  # not bech32 (base58, say)
    if text.lower() != text and text.upper() != text:
        raise InvalidAddress("a bech32 address is all lower case or all upper case, never mixed")
    if prefix != hrp and _coin(prefix) != _coin(hrp):
        other, coin = _coin(prefix), _coin(hrp)
        raise InvalidAddress(f"this is a {other} address (it starts {prefix}1): a {coin} one starts {hrp}1")
    if prefix != hrp:
        raise InvalidAddress(f"this address is for another {_coin(hrp)} network (it starts {prefix}1, not {hrp}1)")
    if len(lower) > 90 or len(data_part) < 7 or any(c not in CHARSET for c in data_part):
        raise InvalidAddress("not a valid bech32 address (wrong length or characters)")
    data = [CHARSET.index(c) for c in data_part]
    const = polymod(data, hrp_state(hrp))
    version, program = data[0], _convert_bits(data[1:-6])
    if const not in (BECH32_CONST, BECH32M_CONST):
        raise InvalidAddress("the address's checksum is wrong: check it for a typo")
    if version > 16 or program is None or not 2 <= len(program) <= 40:
        raise InvalidAddress("not a valid segwit address")
    if (version == 0) != (const == BECH32_CONST):
        raise InvalidAddress("the address's checksum is wrong: check it for a typo")
    if version == 0 and len(program) not in (20, 32):
        raise InvalidAddress("not a valid segwit version 0 address")
    if version > 1:
        raise InvalidAddress(
            f"segwit witness version {version} is not in use yet: funds sent there could be lost; "
            f"give a version 0 ({hrp}1q…) or taproot ({hrp}1p…) address"
        )
    if version == 1 and len(program) != 32:
        raise InvalidAddress("not a valid taproot (segwit version 1) address")
    return lower


def bitcoin_address(text: str, hrp: str) -> str:
    """An address of the Bitcoin-family network with bech32 prefix ``hrp``, or InvalidAddress."""
    if text.lower().startswith(("ltcmweb1", "tmweb1")):
        raise InvalidAddress("MWEB addresses are not supported: give an ordinary Litecoin address (ltc1…, L…, M…)")
    found = _segwit(text, hrp)
    if found is not None:
        return found
    try:
        raw = base58.b58decode_check(text)
    except ValueError:
        raise InvalidAddress(f"not a {_coin(hrp)} address of this network") from None
    if len(raw) != 21:
        raise InvalidAddress(f"not a {_coin(hrp)} address of this network")
    if raw[0] not in BASE58_VERSIONS[hrp]:
        coin = _coin(hrp)
        if any(raw[0] in BASE58_VERSIONS[h] for h in KNOWN_PREFIXES if _coin(h) == coin):
            raise InvalidAddress(f"this address is for another {coin} network")
        raise InvalidAddress(f"not a {coin} address: it may be another coin's")
    return text


def receiving_address(network: Network, text: str) -> str:
    """``text`` as the address to pay on ``network`` (normalised), or InvalidAddress."""
    text = (text or "").strip()
    if not text:
        raise InvalidAddress("an address is required")
    if len(text) > 100:
        raise InvalidAddress("not an address of this network (too long)")
    if network.kind == "evm":
        return evm_address(text)
    if network.kind == "bitcoin" and network.bech32_hrp:
        return bitcoin_address(text, network.bech32_hrp)
    raise InvalidAddress(f"addresses on {network.name} are not supported")
