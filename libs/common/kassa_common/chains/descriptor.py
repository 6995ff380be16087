"""Watch-only output descriptors for a merchant's Bitcoin (or Litecoin) account key.

A merchant who lets Kassa hand out ``.../0/i`` addresses of their BIP84 account key needs
their wallet to watch those addresses. The most portable way to say what to watch is an
output descriptor (BIP 380/382): ``wpkh(xpub.../0/*)#checksum`` is what Bitcoin Core's
``importdescriptors`` takes and what Sparrow (and other descriptor wallets) import, and it
says the script type outright instead of leaving it to the key's version bytes.

Descriptors take keys in the ``xpub``/``tpub`` encoding only: a ``zpub``/``vpub`` (the
SLIP-132 encodings that mean "native segwit" to Electrum and others; Electrum-LTC's
``Ltub``/``ttub`` for a Litecoin key) is the same key with other version bytes, so it is
re-encoded, never rejected. The descriptor is the same whichever encoding the merchant
pasted. Litecoin Core (``litecoind``) reads the same descriptors: its extended keys are
xpub/tpub too, and its ``deriveaddresses`` gives the ``ltc1``/``rltc1`` forms of them.

The key origin (``[fingerprint/84h/0h/0h]``) tells a hardware wallet or a PSBT signer which
master key and path the account key comes from. An account xpub does not contain the
master key's fingerprint (only its parent's), so Kassa can state the origin only when it is
told the fingerprint (``kassa wallet descriptor --fingerprint``) or knows it (the published
test key). Without it the descriptor is still complete for watching: the origin matters only
for signing, and wallet software that needs it asks for it when the signing device is added.

The checksum is BIP 380's (a BCH code over the descriptor's characters, the one Bitcoin Core
computes in ``descriptor.cpp``): written here from the specification, tested against its
vectors, so no descriptor leaves Kassa that a wallet would refuse as mistyped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

import base58

from kassa_common.chains.hd import TEST_XPUBS, is_mainnet_key, validate_xpub

# BIP 380: every character a descriptor may hold, in groups of 32; a character's symbol is
# its position in its group, and every three characters add one symbol for their groups.
INPUT_CHARSET = "0123456789()[],'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#\"\\ "
CHECKSUM_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"  # bech32's
_GENERATOR = (0xF5DEE51989, 0xA9FDCA3312, 0x1BAB10E32D, 0x3706B1677A, 0x644D626FFD)
_INPUT_POSITION = {c: i for i, c in enumerate(INPUT_CHARSET)}

_XPUB = bytes.fromhex("0488b21e")
_TPUB = bytes.fromhex("043587cf")
_HARDENED = 0x80000000
_FINGERPRINT = re.compile(r"^[0-9a-fA-F]{8}$")

# Master-key fingerprints Kassa knows without being told: the published test key (BIP39
# "abandon ... about", empty passphrase) whose m/84'/1'/0' is ``TEST_XPUBS["bitcoin"]``.
KNOWN_FINGERPRINTS = {TEST_XPUBS["bitcoin"]: "73c5da0a"}


def _polymod(symbols: Iterable[int]) -> int:
    chk = 1
    for value in symbols:
        top = chk >> 35
        chk = ((chk & 0x7FFFFFFFF) << 5) ^ value
        for bit, generator in enumerate(_GENERATOR):
            if top >> bit & 1:
                chk ^= generator
    return chk


def _expand(text: str) -> list[int]:
    symbols: list[int] = []
    groups: list[int] = []
    for position, char in enumerate(text):
        value = _INPUT_POSITION.get(char)
        if value is None:
            raise ValueError(f"character {char!r} at position {position} cannot appear in a descriptor")
        symbols.append(value & 31)
        groups.append(value >> 5)
        if len(groups) == 3:
            symbols.append(groups[0] * 9 + groups[1] * 3 + groups[2])
            groups = []
    if len(groups) == 1:
        symbols.append(groups[0])
    elif len(groups) == 2:
        symbols.append(groups[0] * 3 + groups[1])
    return symbols


def checksum(body: str) -> str:
    """The 8-character BIP 380 checksum of a descriptor without its ``#...`` part."""
    value = _polymod(_expand(body) + [0] * 8) ^ 1
    return "".join(CHECKSUM_CHARSET[(value >> (5 * (7 - i))) & 31] for i in range(8))


def with_checksum(body: str) -> str:
    """``body#checksum``."""
    return f"{body}#{checksum(body)}"


def checksum_valid(descriptor: str) -> bool:
    """True if ``descriptor`` ends in ``#`` and its correct 8-character checksum."""
    body, sep, given = descriptor.rpartition("#")
    if not sep or len(given) != 8 or any(c not in CHECKSUM_CHARSET for c in given):
        return False
    try:
        symbols = _expand(body) + [CHECKSUM_CHARSET.index(c) for c in given]
    except ValueError:
        return False
    return _polymod(symbols) == 1


def xpub_form(xpub: str, chain: str = "bitcoin") -> str:
    """The ``chain`` account key as descriptors write it: ``xpub`` (mainnet) or ``tpub``
    (testnet, signet, regtest), whatever encoding (zpub, vpub, Ltub, ...) it was given in."""
    xpub = validate_xpub(chain, xpub)
    raw = base58.b58decode_check(xpub)
    return base58.b58encode_check((_XPUB if is_mainnet_key(chain, xpub) else _TPUB) + raw[4:]).decode()


MAINNET_COIN_TYPES = {"bitcoin": 0, "litecoin": 2}  # SLIP-44; every test network's is 1


def key_origin(xpub: str, fingerprint: str | None = None, chain: str = "bitcoin") -> str | None:
    """``fingerprint/84h/COINh/ACCOUNTh`` for a BIP84 account key, or None when the master
    fingerprint is neither given nor known.

    The path is read from the key itself (depth 3, a hardened account number) and the
    network of its encoding (coin type 0 on Bitcoin's mainnet, 2 on Litecoin's, 1 on the
    test networks); a key that is not at account depth gets no origin, since its path
    cannot be told.
    """
    xpub = validate_xpub(chain, xpub)
    if fingerprint is None:
        fingerprint = KNOWN_FINGERPRINTS.get(xpub_form(xpub, chain)) or KNOWN_FINGERPRINTS.get(xpub)
        if fingerprint is None:
            return None
    if not _FINGERPRINT.match(fingerprint.strip()):
        raise ValueError("a master key fingerprint is 8 hex characters (e.g. 73c5da0a), as your wallet shows it")
    raw = base58.b58decode_check(xpub)
    depth, child = raw[4], int.from_bytes(raw[9:13], "big")
    if depth != 3 or not child & _HARDENED:
        raise ValueError(f"this key is at depth {depth}, not an account key (m/84'/0'/n'): its origin path is unknown")
    coin = MAINNET_COIN_TYPES[chain] if is_mainnet_key(chain, xpub) else 1
    return f"{fingerprint.strip().lower()}/84h/{coin}h/{child - _HARDENED}h"


class Descriptors(NamedTuple):
    """A BIP84 account's watch-only descriptors, each with its checksum."""

    receive: str  # wpkh(.../0/*): the addresses Kassa hands out
    change: str  # wpkh(.../1/*): the wallet's own change, for a wallet that spends too
    origin: str | None  # fingerprint/84h/0h/0h, or None when unknown (not in the descriptors)


def wallet_descriptors(xpub: str, fingerprint: str | None = None, chain: str = "bitcoin") -> Descriptors:
    """The receive and change descriptors of the ``chain`` account key ``xpub`` (any encoding)."""
    origin = key_origin(xpub, fingerprint, chain)
    key = (f"[{origin}]" if origin else "") + xpub_form(xpub, chain)
    return Descriptors(with_checksum(f"wpkh({key}/0/*)"), with_checksum(f"wpkh({key}/1/*)"), origin)
