"""Rates and exact amount arithmetic."""

from decimal import Decimal

import pytest

from kassa_common.pricing.amounts import crypto_amount, from_base_units, plain, to_base_units, units_text
from kassa_common.pricing.fixed import DEFAULT_FIXED_RATES, FixedRates, RateProvider, RateUnavailable, parse_fixed_rates


def test_parse_default_rates():
    assert parse_fixed_rates(DEFAULT_FIXED_RATES) == {
        "ETH": Decimal(3000),
        "BTC": Decimal(60000),
        "LTC": Decimal(80),
        "POL": Decimal("0.50"),
        "BNB": Decimal(600),
        "EUR": Decimal("1.08"),
        "GBP": Decimal("1.27"),
        "CHF": Decimal("1.13"),
        "CAD": Decimal("0.73"),
        "AUD": Decimal("0.66"),
        "JPY": Decimal("0.0067"),
    }


def test_parse_is_lenient_about_spacing_and_case():
    assert parse_fixed_rates(" eth = 2500.5 , btc=1e5,") == {"ETH": Decimal("2500.5"), "BTC": Decimal("1E+5")}
    assert parse_fixed_rates("") == {}


@pytest.mark.parametrize(
    "text",
    ["ETH", "ETH=", "=5", "ETH=abc", "ETH=0", "ETH=-1", "ETH=NaN", "ETH=Infinity", "ETH=1,ETH=2", "E TH=1", "ETH=1=2"],
)
def test_parse_rejects_bad_input(text):
    with pytest.raises(ValueError):
        parse_fixed_rates(text)


def test_fixed_rates():
    rates = FixedRates(parse_fixed_rates(DEFAULT_FIXED_RATES))
    assert rates.usd_rate("eth") == Decimal(3000)
    assert rates.usd_rate("USDC") == Decimal(1)
    assert rates.usd_rate("usdt") == Decimal(1)
    with pytest.raises(RateUnavailable):
        rates.usd_rate("DOGE")


def test_stablecoins_are_pinned_to_one_dollar():
    rates = FixedRates({"USDC": Decimal("0.99")})
    assert rates.usd_rate("USDC") == Decimal(1)
    assert FixedRates({}).usd_rate("USDT") == Decimal(1)


def test_fixed_rates_reject_bad_values():
    with pytest.raises(ValueError):
        FixedRates({"ETH": Decimal(0)})


def test_fixed_rates_is_a_rate_provider():
    provider: RateProvider = FixedRates({})
    assert provider.usd_rate("USDC") == 1


def test_stablecoin_amount_keeps_token_places():
    amount = crypto_amount(Decimal("10.00"), Decimal(1), 6)
    assert amount == Decimal(10) and str(amount) == "10.000000"


def test_amount_rounds_up_to_eight_places():
    assert str(crypto_amount(Decimal(10), Decimal(3000), 18)) == "0.00333334"
    assert str(crypto_amount(Decimal(100), Decimal(60000), 8)) == "0.00166667"
    assert str(crypto_amount(Decimal(1), Decimal(3), 2)) == "0.34"
    assert str(crypto_amount(Decimal(6), Decimal(3), 0)) == "2"
    assert str(crypto_amount(Decimal(7), Decimal(3), 0)) == "3"


def test_amount_exact_division_is_not_bumped():
    assert str(crypto_amount(Decimal(30), Decimal(3000), 18)) == "0.01000000"


def test_amount_tiny_excess_still_rounds_up():
    # Quotient exceeds 0.01 by far less than 28 significant digits can show.
    usd = Decimal("30." + "0" * 39 + "1")
    assert crypto_amount(usd, Decimal(3000), 18) == Decimal("0.01000001")


def test_amount_never_underpays():
    rate = Decimal("3123.4567")
    for cents in range(1, 2000, 37):
        usd = Decimal(cents) / 100
        assert crypto_amount(usd, rate, 18) * rate >= usd


@pytest.mark.parametrize(
    "usd,rate", [(Decimal(-1), Decimal(1)), (Decimal(1), Decimal(0)), (Decimal("NaN"), Decimal(1))]
)
def test_amount_rejects_bad_input(usd, rate):
    with pytest.raises(ValueError):
        crypto_amount(usd, rate, 18)


def test_base_units_round_trip():
    assert to_base_units(Decimal("10.000000"), 6) == 10_000_000
    assert to_base_units(Decimal("0.00333334"), 18) == 3_333_340_000_000_000
    assert to_base_units(Decimal("1E+2"), 8) == 10_000_000_000
    assert to_base_units(Decimal(0), 18) == 0
    assert to_base_units(Decimal("-1.5"), 1) == -15
    big = 123456789012345678901234567890123456789
    assert to_base_units(from_base_units(big, 18), 18) == big


def test_to_base_units_rejects_excess_precision():
    with pytest.raises(ValueError):
        to_base_units(Decimal("0.0000001"), 6)
    with pytest.raises(ValueError):
        to_base_units(Decimal("Infinity"), 6)


def test_from_base_units_is_exact_and_normalized():
    assert str(from_base_units(1_500_000, 6)) == "1.500000"
    assert str(from_base_units(0, 8)) == "0E-8"  # == 0, with 8 places
    assert from_base_units(0, 8) == 0
    assert str(from_base_units(5, 0)) == "5"
    assert str(from_base_units(-25, 2)) == "-0.25"
    wei = 10**30 + 1
    assert str(from_base_units(wei, 18)) == "1000000000000.000000000000000001"


def test_a_zero_amount_is_zero_tokens():
    assert crypto_amount(Decimal(0), Decimal(3000), 18) == 0


def test_trailing_zeros_beyond_the_tokens_places_are_no_excess():
    # 12.3400 at 2 places: the coefficient 123400 over 10**2, nothing left over
    assert to_base_units(Decimal("12.3400"), 2) == 1234
    assert to_base_units(Decimal("1.00"), 0) == 1


def test_amounts_are_shown_plain_and_exact():
    assert plain(Decimal("1E+2")) == "100"
    assert plain(Decimal("2.500")) == "2.5"
    # 40 significant digits, past the default context's 28: not rounded
    assert plain(Decimal("123456789012345678901234567890123456.7890")) == "123456789012345678901234567890123456.789"
    assert units_text(12_500_000, 6) == "12.5"
    assert units_text(Decimal(10**30 + 1), 18) == "1000000000000.000000000000000001"
