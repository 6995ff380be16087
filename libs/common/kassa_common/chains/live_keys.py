"""Which extended public keys live mode takes (DESIGN.md section 5, "Live wallets").

Live payments are real money, paid to the merchant's own wallet. So live mode refuses:

- testnet keys (tpub, vpub): a wallet holds their coins as test coins, and Bitcoin testnet
  keys give ``tb1``/``bcrt1`` addresses that mainnet wallets refuse to pay;
- published test keys: the account keys of the BIP39 test mnemonic "abandon ... about"
  (the ones Kassa's own test mode uses, the BIP44/BIP84 Bitcoin accounts of the BIP84
  test vectors, and its BIP84 Litecoin account, whose addresses wallet libraries publish)
  and of "test ... junk", the development mnemonic of anvil and Hardhat.
  Anyone can spend what their addresses receive. With ``KASSA_ENV=development`` a
  published key is taken with a warning: the walk-through on the local chain uses one.

Keys are compared by what they are (``hd.key_material``), not by their text, so a
published key re-encoded (zpub as xpub, vpub as tpub) is still recognised.
"""

from __future__ import annotations

from functools import lru_cache

from kassa_common.chains.hd import TEST_XPUBS, InvalidXpub, is_mainnet_key, key_material

PUBLISHED_TEST_KEYS = (
    *TEST_XPUBS.values(),  # abandon: m/44'/60'/0' (xpub), m/84'/1'/0' (vpub)
    # abandon: m/84'/0'/0' (zpub), m/44'/0'/0' (xpub), m/44'/1'/0' (tpub)
    "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs",
    "xpub6BosfCnifzxcFwrSzQiqu2DBVTshkCXacvNsWGYJVVhhawA7d4R5WSWGFNbi8Aw6ZRc1brxMyWMzG3DSSSSoekkudhUd9yLb6qx39T9nMdj",
    "tpubDC5FSnBiZDMmhiuCmWAYsLwgLYrrT9rAqvTySfuCCrgsWz8wxMXUS9Tb9iVMvcRbvFcAHGkMD5Kx8koh4GquNGNTfohfk7pgjhaPCdXpoba",
    # abandon: m/84'/2'/0' (Litecoin's BIP84 account, zpub; ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh at 0/0)
    "zpub6rPo5mF47z5coVm5rvWv7fv181awb7Vckn5Cf3xQXBVKu18kuBHDhNi1Jrb4br6vVD3ZbrnXemEsWJoR18mZwkUdzwD8TQnHDUCGxqZ6swA",
    # test ... junk (anvil, Hardhat): m/44'/60'/0' (xpub)
    "xpub6Ce9NcJvTk36xtLSrJLZqE7wtgA5deCeYs7rSQtreh4cj6ByPtrg9sD7V2FNFLPnf8heNP3FGkeV9qwfzvZNSd54JoNXVsXFYSYwHsnJxqP",
)
PUBLISHED_WARNING = (
    "this is a published test key: anyone can spend what its addresses receive. It is accepted "
    "only because KASSA_ENV=development; never use it for real money"
)


@lru_cache(maxsize=1)
def _published() -> frozenset[bytes]:
    # Every encoding above is a valid Bitcoin account key, so "bitcoin" parses them all.
    return frozenset(key_material("bitcoin", key) for key in PUBLISHED_TEST_KEYS)


def is_published_test_key(chain: str, xpub: str) -> bool:
    return key_material(chain, xpub) in _published()


def live_key_warning(chain: str, xpub: str, *, allow_test_keys: bool) -> str | None:
    """None if live mode takes this key; a warning if it takes it only because published
    test keys are allowed (development); raises ``InvalidXpub`` saying why it does not."""
    if is_published_test_key(chain, xpub):
        if allow_test_keys:
            return PUBLISHED_WARNING
        raise InvalidXpub(
            "this is a published test key: anyone can spend what its addresses receive. Live mode "
            "needs the key of your own wallet (a development stack with KASSA_ENV=development "
            "accepts it)"
        )
    if not is_mainnet_key(chain, xpub):
        raise InvalidXpub(
            "this is a testnet key (tpub/vpub): live mode takes a mainnet key "
            "(xpub, or zpub for Bitcoin) of your wallet"
        )
    return None
