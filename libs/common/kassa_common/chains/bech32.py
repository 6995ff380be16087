"""Bech32 (BIP173): the checksum over a human-readable prefix and 5-bit groups, and the
witness version 0 address of a 20-byte key hash. ``hd`` encodes the addresses it derives
with it; ``addresses`` checks the segwit addresses a customer enters (bech32 and BIP350's
bech32m, which differs only in the checksum's final constant)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _mask(top: int) -> int:
    mask = 0
    for bit, gen in enumerate(_GEN):
        if top >> bit & 1:
            mask ^= gen
    return mask


# BIP173 checksum step as a lookup on the five bits shifted out of the state.
_TABLE = tuple(_mask(top) for top in range(32))


def polymod(values: Iterable[int], chk: int = 1) -> int:
    """The checksum state after ``values`` (5-bit groups), from state ``chk``."""
    for value in values:
        chk = ((chk & 0x1FFFFFF) << 5) ^ value ^ _TABLE[chk >> 25]
    return chk


@lru_cache(maxsize=8)
def hrp_state(hrp: str) -> int:
    """Checksum state after the expanded human-readable part."""
    return polymod([ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp])


def p2wpkh_address(hrp: str, program: bytes) -> str:
    """Bech32 (BIP173) witness v0 address for a 20-byte key hash."""
    bits = int.from_bytes(program, "big")  # 160 bits = exactly 32 groups of 5
    data = [0] + [(bits >> shift) & 31 for shift in range(155, -1, -5)]
    chk = polymod(data + [0] * 6, hrp_state(hrp)) ^ 1
    data += [(chk >> shift) & 31 for shift in range(25, -1, -5)]
    return hrp + "1" + "".join(CHARSET[d] for d in data)
