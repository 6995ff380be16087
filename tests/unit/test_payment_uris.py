"""Payment request URIs (EIP-681, BIP-21): what a wallet app opens from the checkout's button
and QR code, and what a refund screen will ask for."""

import pytest

from kassa_common.chains.networks import load_registry
from kassa_common.chains.uris import bip21, eip681_erc20, eip681_native, payment_request

ADDRESS = "0x52908400098527886E0F7030069857D2E4169EE7"
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def test_native_coin_asks_for_wei_on_its_chain():
    assert eip681_native(ADDRESS, 8453, 10**16) == f"ethereum:{ADDRESS}@8453?value=10000000000000000"


def test_erc20_calls_transfer_with_the_recipient_and_base_units():
    assert (
        eip681_erc20(USDC_BASE, 8453, ADDRESS, 12_340_000)
        == f"ethereum:{USDC_BASE}@8453/transfer?address={ADDRESS}&uint256=12340000"
    )


def test_bitcoin_amount_is_a_plain_decimal_of_btc():
    assert bip21(BTC_ADDRESS, 100_000) == f"bitcoin:{BTC_ADDRESS}?amount=0.001"
    assert bip21(BTC_ADDRESS, 1) == f"bitcoin:{BTC_ADDRESS}?amount=0.00000001"  # never 1E-8
    assert bip21(BTC_ADDRESS, 250_000_000) == f"bitcoin:{BTC_ADDRESS}?amount=2.5"


def test_a_chain_without_an_id_leaves_it_out():
    assert eip681_native(ADDRESS, None, 1) == f"ethereum:{ADDRESS}?value=1"


@pytest.mark.parametrize("units", [-1, 1.5, True])
def test_amounts_are_whole_base_units(units):
    with pytest.raises(ValueError):
        eip681_native(ADDRESS, 1, units)


def test_payment_request_picks_the_form_from_the_network_and_token():
    registry = load_registry({})
    base = registry.get("BASE")
    assert payment_request(base, "usdc", ADDRESS, 5_000_000, 6) == eip681_erc20(USDC_BASE, 8453, ADDRESS, 5_000_000)
    assert payment_request(base, "ETH", ADDRESS, 7, 18) == eip681_native(ADDRESS, 8453, 7)
    assert payment_request(registry.get("BITCOIN"), "BTC", BTC_ADDRESS, 75_000, 8) == bip21(BTC_ADDRESS, 75_000)
    assert payment_request(None, "BTC", BTC_ADDRESS, 75_000, 8) == bip21(BTC_ADDRESS, 75_000)
