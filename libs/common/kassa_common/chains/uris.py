"""Payment request URIs a wallet app opens (or scans from a QR code): EIP-681 for EVM
networks, BIP-21 for Bitcoin. Pure functions of the amounts in base units, so the checkout
and a refund screen ask for exactly the same thing.

- native EVM coin: ``ethereum:ADDRESS@CHAINID?value=WEI``
- ERC-20 token: ``ethereum:TOKEN@CHAINID/transfer?address=ADDRESS&uint256=UNITS``
- Bitcoin: ``bitcoin:ADDRESS?amount=BTC`` (a plain decimal, never an exponent); Litecoin
  the same with its own scheme, ``litecoin:ADDRESS?amount=LTC`` (the scheme is the network's
  wallet chain: Litecoin wallets register ``litecoin:``)
"""

from __future__ import annotations

from kassa_common.chains.networks import Network
from kassa_common.pricing.amounts import units_text


def _chain(chain_id: int | None) -> str:
    return f"@{chain_id}" if chain_id else ""


def _units(units: int) -> int:
    if isinstance(units, bool) or int(units) != units or units < 0:
        raise ValueError("an amount in base units is a whole number, zero or more")
    return int(units)


def eip681_native(address: str, chain_id: int | None, wei: int) -> str:
    """Send ``wei`` of the chain's own coin to ``address``."""
    return f"ethereum:{address}{_chain(chain_id)}?value={_units(wei)}"


def eip681_erc20(contract: str, chain_id: int | None, address: str, units: int) -> str:
    """Call ``transfer(address, units)`` on the token at ``contract``."""
    return f"ethereum:{contract}{_chain(chain_id)}/transfer?address={address}&uint256={_units(units)}"


def bip21(address: str, satoshis: int, decimals: int = 8, scheme: str = "bitcoin") -> str:
    """Send ``satoshis`` (as BTC, or the coin of ``scheme``) to ``address``."""
    return f"{scheme}:{address}?amount={units_text(_units(satoshis), decimals)}"


def payment_request(network: Network | None, token: str, address: str, units: int, decimals: int) -> str:
    """The URI asking for ``units`` of ``token`` on ``network`` to ``address``. A network the
    configuration no longer lists is taken for Bitcoin (the only kind without a chain id)."""
    if network is None:
        return bip21(address, units, decimals)
    if network.kind == "bitcoin":
        return bip21(address, units, decimals, scheme=network.key_chain)
    t = network.token(token)
    if t is None or t.native or not t.contract:
        return eip681_native(address, network.chain_id, units)
    return eip681_erc20(t.contract, network.chain_id, address, units)
