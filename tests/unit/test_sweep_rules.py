"""The sweeper's pure rules: when a deposit is due (SWEEP_MIN_USD / SWEEP_MAX_AGE_HOURS),
what its funds are worth, the fees of a replacement, and its settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from kassa_common.chains.networks import load_registry
from kassa_common.config import Settings, SweeperSettings
from kassa_common.pricing.fixed import FixedRates
from kassa_common.sweeps import SweepPolicy, usd_value
from kassa_sweeper import configured
from kassa_sweeper.txs import Fees, Signer

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
POLICY = SweepPolicy(Decimal(10), timedelta(hours=24))
LOCAL = load_registry({}).get("LOCAL_EVM")
KEY = "0x" + "42" * 32


def sweep_options(env: dict[str, str]) -> SweeperSettings:
    """The sweeper's options as its entrypoints take them: from the one ``Settings``."""
    return configured.checked(Settings.from_env(env))


@pytest.mark.parametrize(
    "usd, age, due",
    [
        (Decimal(10), timedelta(0), True),  # worth the gas
        (Decimal("9.99"), timedelta(hours=23), False),
        (Decimal("0.01"), timedelta(hours=24), True),  # waited long enough anyway
        (None, timedelta(hours=1), False),  # no rate: only the age decides
        (None, timedelta(days=2), True),
    ],
)
def test_a_deposit_is_due_once_worth_the_minimum_or_old_enough(usd, age, due):
    assert POLICY.due(usd, NOW - age, NOW) is due


def test_a_deposit_is_worth_its_tokens_at_their_rates():
    rates = FixedRates({"ETH": Decimal(3000)})
    assert usd_value(LOCAL, {"USDC": 5_000_000, "USDT": 2_500_000, "ETH": 10**16}, rates) == Decimal("37.5")
    assert usd_value(LOCAL, {"ETH": 10**16}, FixedRates({})) is None  # no ETH rate
    assert usd_value(LOCAL, {"DOGE": 1}, rates) is None


@pytest.mark.parametrize(
    "old, market, new",
    [
        (Fees(100, 10), Fees(50, 5), Fees(113, 12)),  # at least 12.5% more on both (nodes want 10%)
        (Fees(100, 10), Fees(300, 20), Fees(300, 20)),  # never below what the market asks now
        (Fees(8, 8), Fees(1, 1), Fees(9, 9)),
    ],
)
def test_a_replacement_pays_enough_more_to_replace(old, market, new):
    assert old.replacing(market) == new
    replaced = old.replacing(market)
    assert replaced.max_fee_per_gas >= replaced.max_priority_fee_per_gas


def test_the_signer_never_shows_its_key():
    signer = Signer(KEY)
    assert KEY[2:] not in repr(signer) and signer.address in repr(signer)
    assert KEY not in repr(sweep_options({"SWEEPER_PRIVATE_KEY": KEY}))


def test_sweep_settings_have_defaults_and_are_read_once():
    options = sweep_options(
        {"SWEEP_MIN_USD": "25.5", "SWEEP_MAX_AGE_HOURS": "0.5", "SWEEPER_NETWORKS": "local_evm, base"}
    )
    assert configured.policy(options) == SweepPolicy(Decimal("25.5"), timedelta(minutes=30))
    assert options.networks == ("LOCAL_EVM", "BASE") and configured.signer(options) is None
    assert sweep_options({}) == SweeperSettings()
    assert SweeperSettings().max_spend_usd_per_hour == Decimal(100)
    assert sweep_options({"SWEEP_MAX_SPEND_USD_PER_HOUR": "12.5"}).max_spend_usd_per_hour == Decimal("12.5")


@pytest.mark.parametrize(
    "env, message",
    [
        ({"SWEEP_MIN_USD": "-1"}, "SWEEP_MIN_USD"),
        ({"SWEEP_MAX_AGE_HOURS": "soon"}, "SWEEP_MAX_AGE_HOURS"),
        ({"SWEEP_BATCH_SIZE": "0"}, "SWEEP_BATCH_SIZE"),
        ({"SWEEP_MAX_SPEND_USD_PER_HOUR": "0"}, "SWEEP_MAX_SPEND_USD_PER_HOUR"),
        ({"SWEEP_MAX_SPEND_USD_PER_HOUR": "lots"}, "SWEEP_MAX_SPEND_USD_PER_HOUR"),
        ({"SWEEPER_PRIVATE_KEY": "0x1234"}, "SWEEPER_PRIVATE_KEY"),
    ],
)
def test_bad_sweep_settings_fail_at_start_with_their_name(env, message):
    with pytest.raises(ValueError, match=message):
        sweep_options(env)


def test_only_evm_networks_with_an_rpc_url_and_a_factory_are_swept():
    settings = Settings.from_env(
        {"LOCAL_EVM_RPC_URL": "http://127.0.0.1:8545", "BITCOIN_RPC_URL": "http://x", "BASE_RPC_URL": "http://y"}
    )
    assert [n.name for n in configured.sweepable(SweeperSettings(), settings)] == ["BASE", "LOCAL_EVM"]
    assert [n.name for n in configured.sweepable(SweeperSettings(networks=("LOCAL_EVM",)), settings)] == ["LOCAL_EVM"]
