"""Non-custodial deposit addresses from an account-level extended public key.

The merchant hands us an account xpub (e.g. ``m/44'/60'/0'`` for EVM chains,
``m/84'/0'/0'`` for Bitcoin); we derive the external-chain child ``0/index``
for every payment. Private keys never touch this code: private extended keys
are rejected outright.

Bitcoin-family keys (``bitcoin``, ``litecoin``) must be BIP84 account keys and produce
P2WPKH (bech32) addresses (the encoding is ``bech32``).
Accepted version bytes: ``xpub``/``zpub`` (mainnet) and ``tpub``/``vpub``
(testnet, signet, regtest); for Litecoin also Electrum-LTC's ``Ltub``/``ttub`` (the same
key, other version bytes; Litecoin Core itself writes xpub/tpub). The caller picks the
address prefix among its chain's (``CHAIN_HRPS``: ``bc``, ``tb``, ``bcrt``; ``ltc``,
``tltc``, ``rltc``), except that a testnet key never yields a mainnet address: asked for
``bc`` it gives the ``tb`` address of the same key (``ltc``: ``tltc``).

``TEST_XPUBS`` holds the keys of the public BIP39 test mnemonic
"abandon abandon ... abandon about" (empty passphrase). Anyone can spend from
them, so they are for test mode only:

* ``evm``: ``m/44'/60'/0'`` as an ``xpub``. Index 0 is
  0x9858EfFD232B4033E47d90003D41EC34EcaEda94.
* ``bitcoin``: ``m/84'/1'/0'`` (BIP84 testnet account) as a ``vpub``. We chose
  the testnet key over the simpler mainnet ``zpub`` on purpose: test mode on
  the BITCOIN network then shows ``tb1...`` addresses, never a mainnet address
  where real coins would go to a key whose words are public. Index 0 is
  tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl (``tb``) or
  bcrt1q6rz28mcfaxtmd6v789l9rrlrusdprr9pz3cppk (``bcrt``).
* ``litecoin``: the same ``vpub`` (SLIP-44 coin type 1 is every coin's testnet), so
  test mode on LITECOIN shows ``tltc1...`` addresses and LOCAL_LITECOIN ``rltc1...``.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache
from typing import NamedTuple, overload

import base58
import coincurve
from eth_utils import keccak

from kassa_common.chains import bech32


class InvalidXpub(ValueError):
    """The extended public key is unusable; the message is meant for humans."""


TEST_XPUBS: dict[str, str] = {
    "evm": "xpub6DCoCpSuQZB2jawqnGMEPS63ePKWkwWPH4TU45Q7LPXWuNd8TMtVxRrgjtEshuqpK3mdhaWHPFsBngh5GFZaM6si3yZdUsT8ddYM3PwnATt",  # noqa: E501
    "bitcoin": "vpub5Y6cjg78GGuNLsaPhmYsiw4gYX3HoQiRBiSwDaBXKUafCt9bNwWQiitDk5VZ5BVxYnQdwoTyXSs2JHRPAgjAvtbBrf8ZhDYe2jWAqvZVnsc",  # noqa: E501
}
TEST_XPUBS["litecoin"] = TEST_XPUBS["bitcoin"]

UTXO_CHAINS = ("bitcoin", "litecoin")  # the Bitcoin family: BIP84 keys, bech32 P2WPKH addresses

# Public version bytes -> (prefix, is_mainnet, chain kinds allowed).
_FAMILY = frozenset(UTXO_CHAINS)
_PUBLIC_VERSIONS: dict[bytes, tuple[str, bool, frozenset[str]]] = {
    bytes.fromhex("0488b21e"): ("xpub", True, frozenset({"evm", *_FAMILY})),
    bytes.fromhex("043587cf"): ("tpub", False, frozenset({"evm", *_FAMILY})),
    bytes.fromhex("04b24746"): ("zpub", True, _FAMILY),
    bytes.fromhex("045f1cf6"): ("vpub", False, _FAMILY),
    bytes.fromhex("019da462"): ("Ltub", True, frozenset({"litecoin"})),  # Electrum-LTC's xpub
    bytes.fromhex("0436f6e1"): ("ttub", False, frozenset({"litecoin"})),  # and its tpub
    bytes.fromhex("049d7cb2"): ("ypub", True, frozenset()),  # BIP49 P2SH-P2WPKH
    bytes.fromhex("044a5262"): ("upub", False, frozenset()),
    bytes.fromhex("01b26ef6"): ("Mtub", True, frozenset()),  # Electrum-LTC's BIP49
}
_BIP49 = ("ypub", "upub", "Mtub")
_PRIVATE_PREFIXES = ("xprv", "tprv", "yprv", "uprv", "zprv", "vprv", "ltpv", "ttpv", "mtpv")
_PRIVATE_VERSIONS = frozenset(
    bytes.fromhex(v)
    for v in (
        *("0488ade4", "04358394", "049d7878", "044a4e28", "04b2430c", "045f18bc"),
        *("019d9cfe", "0436ef7d", "01b26792"),  # Electrum-LTC's Ltpv, ttpv, Mtpv
    )
)
# every address prefix a key of a chain can be asked for: mainnet, testnet, regtest
CHAIN_HRPS = {"bitcoin": ("bc", "tb", "bcrt"), "litecoin": ("ltc", "tltc", "rltc")}
BECH32_HRPS = CHAIN_HRPS["bitcoin"]
_MAINNET_HRPS = frozenset(hrps[0] for hrps in CHAIN_HRPS.values())
_TESTNET_HRPS = {hrps[0]: hrps[1] for hrps in CHAIN_HRPS.values()}  # test mode's form (BIP 173)
_CHAINS = ("evm", *UTXO_CHAINS)
_ACCOUNT_PATHS = {"bitcoin": "m/84'/0'/0'", "litecoin": "m/84'/2'/0'"}
_HARDENED = 0x80000000


class _Node(NamedTuple):
    pubkey: coincurve.PublicKey
    chain_code: bytes
    mainnet: bool


def _check_chain(chain: str) -> None:
    if chain not in _CHAINS:
        raise ValueError(f"unknown chain kind {chain!r}; expected one of {', '.join(_CHAINS)}")


def _ckd_pub(pubkey: coincurve.PublicKey, chain_code: bytes, index: int) -> tuple[coincurve.PublicKey, bytes]:
    """BIP32 public child derivation (non-hardened ``index`` only)."""
    digest = hmac.digest(chain_code, pubkey.format(compressed=True) + index.to_bytes(4, "big"), "sha512")
    try:
        child = pubkey.add(digest[:32])  # point(IL) + K_par; fails if IL >= n or result is infinity
    except ValueError as exc:  # probability below 2**-127
        raise ValueError(f"index {index} yields an invalid child key; use the next index") from exc
    return child, digest[32:]


@lru_cache(maxsize=1024)
def _parse(chain: str, xpub: str) -> _Node:
    """Decode and check an extended public key (``xpub`` already stripped)."""
    if xpub[:4].lower() in _PRIVATE_PREFIXES:
        raise InvalidXpub("this is a private extended key; paste the extended PUBLIC key (...pub) instead")
    try:
        raw = base58.b58decode_check(xpub)
    except ValueError:
        raise InvalidXpub("not a valid extended public key: bad characters or checksum (check for typos)") from None
    if len(raw) != 78:
        raise InvalidXpub(f"not a valid extended public key: decoded length {len(raw)} bytes, expected 78")
    version, depth, fingerprint, child_number = raw[:4], raw[4], raw[5:9], raw[9:13]
    chain_code, key = raw[13:45], raw[45:]
    if version in _PRIVATE_VERSIONS:
        raise InvalidXpub("this is a private extended key; paste the extended PUBLIC key instead")
    if version not in _PUBLIC_VERSIONS:
        raise InvalidXpub(f"unknown extended key version 0x{version.hex()}; expected an xpub-style public key")
    prefix, mainnet, kinds = _PUBLIC_VERSIONS[version]
    if prefix in _BIP49:
        raise InvalidXpub(
            f"a {prefix} is a BIP49 key (wrapped segwit, 3.../M... addresses): Kassa derives native segwit "
            "addresses, which a BIP49 wallet does not watch; enter your wallet's BIP84 account key "
            f"(zpub, {_ACCOUNT_PATHS.get(chain, _ACCOUNT_PATHS['bitcoin'])}) instead"
        )
    if chain not in kinds:
        wanted = "an xpub" if chain == "evm" else "a BIP84 native-segwit key (zpub/vpub, or xpub/tpub)"
        raise InvalidXpub(f"a {prefix} key cannot be used for {chain} addresses; expected {wanted}")
    if depth == 0 and (fingerprint != b"\0\0\0\0" or child_number != b"\0\0\0\0"):
        raise InvalidXpub("malformed extended key: depth 0 with a parent fingerprint or child number")
    if key[0] not in (2, 3):
        raise InvalidXpub("malformed extended key: key data is not a compressed public key")
    try:
        pubkey = coincurve.PublicKey(key)
    except ValueError:
        raise InvalidXpub("malformed extended key: public key is not on the curve") from None
    return _Node(pubkey, chain_code, mainnet)


@lru_cache(maxsize=1024)
def _external_chain(chain: str, xpub: str) -> _Node:
    """The parsed key's ``/0`` (receive) child, cached per xpub."""
    node = _parse(chain, xpub)
    pubkey, chain_code = _ckd_pub(node.pubkey, node.chain_code, 0)
    return _Node(pubkey, chain_code, node.mainnet)


def validate_xpub(chain: str, xpub: str) -> str:
    """Return the stripped ``xpub`` if usable for ``chain``, else raise InvalidXpub."""
    _check_chain(chain)
    if not isinstance(xpub, str) or not xpub.strip():
        raise InvalidXpub("extended public key is empty")
    xpub = xpub.strip()
    _parse(chain, xpub)
    return xpub


def key_material(chain: str, xpub: str) -> bytes:
    """The key itself, whatever its encoding: chain code and compressed public key.

    An xpub, zpub, tpub or vpub of one key differ only in their version bytes, and derive
    the same children; so this, not the text, is what identifies a key.
    """
    node = _parse(chain, validate_xpub(chain, xpub))
    return node.chain_code + node.pubkey.format(compressed=True)


def is_mainnet_key(chain: str, xpub: str) -> bool:
    """True for xpub/zpub/Ltub, False for the testnet encodings tpub/vpub/ttub."""
    return _parse(chain, validate_xpub(chain, xpub)).mainnet


def _eip55(address: bytes) -> str:
    """EIP-55 mixed-case checksum encoding of a 20-byte address."""
    hex_addr = address.hex()
    digest = keccak(hex_addr.encode()).hex()
    return "0x" + "".join(c.upper() if d in "89abcdef" else c for c, d in zip(hex_addr, digest, strict=False))


def _hash160(data: bytes) -> bytes:
    sha = hashlib.sha256(data).digest()
    try:
        return hashlib.new("ripemd160", sha).digest()
    except ValueError:  # OpenSSL builds without ripemd160
        from bitcoin.core.contrib.ripemd160 import ripemd160

        digest: bytes = ripemd160(sha)
        return digest


@overload
def mode_hrp(hrp: str, test_mode: bool) -> str: ...
@overload
def mode_hrp(hrp: None, test_mode: bool) -> None: ...
@overload
def mode_hrp(hrp: str | None, test_mode: bool) -> str | None: ...
def mode_hrp(hrp: str | None, test_mode: bool) -> str | None:
    """The address prefix a network with prefix ``hrp`` shows in a mode: in test mode, its test
    network's (``tb`` for Bitcoin's ``bc``, ``tltc`` for Litecoin's ``ltc``; regtest's ``bcrt``
    and ``rltc`` are test networks already), so no test payment ever shows an address that
    takes real coins."""
    return _TESTNET_HRPS.get(hrp, hrp) if test_mode and hrp else hrp


def derive_address(chain: str, xpub: str, index: int, *, bech32_hrp: str | None = None) -> str:
    """Address of child ``0/index`` below the account key ``xpub``.

    ``chain`` is a wallet's chain family: ``"evm"`` gives an EIP-55 ``0x`` address,
    ``"bitcoin"`` or ``"litecoin"`` a P2WPKH bech32 address with prefix ``bech32_hrp``
    (one of the chain's ``CHAIN_HRPS``; default its mainnet's, ``"bc"`` or ``"ltc"``). A
    testnet key (tpub/vpub) asked for the mainnet prefix gives the testnet's instead.
    """
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < _HARDENED:
        raise ValueError(f"address index must be an integer in [0, 2**31), got {index!r}")
    xpub = validate_xpub(chain, xpub)
    node = _external_chain(chain, xpub)
    if chain in CHAIN_HRPS:
        hrps = CHAIN_HRPS[chain]
        hrp = hrps[0] if bech32_hrp is None else bech32_hrp
        if hrp not in hrps:
            raise ValueError(f"unsupported bech32 prefix {hrp!r} for {chain}; expected {', '.join(hrps)}")
        if not node.mainnet and hrp in _MAINNET_HRPS:
            hrp = _TESTNET_HRPS[hrp]  # a testnet key never yields a mainnet address
    child, _ = _ckd_pub(node.pubkey, node.chain_code, index)
    if chain == "evm":
        return _eip55(keccak(child.format(compressed=False)[1:])[-20:])
    return bech32.p2wpkh_address(hrp, _hash160(child.format(compressed=True)))
